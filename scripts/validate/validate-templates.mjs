#!/usr/bin/env node
// Checks synthesized CloudFormation templates with tools made for them (make
// validate; docs/deploy.md#validation):
//   - resource types, property names (nested ones too, where the spec types
//     them), required properties and Fn::GetAtt attribute names against
//     @aws-cdk/aws-service-spec, the resource specification CDK itself is
//     generated from;
//   - every Step Functions definition, its Fn::Join/Fn::Sub resolved to
//     placeholder ARNs, through asl-validator and
//     amazon-states-language-service;
//   - no dependency cycle (Ref, Fn::GetAtt, Fn::Sub, DependsOn);
//   - physical names within AWS's length limits for a stage name of
//     --stage-length characters (default 16, the longest stage.go accepts),
//     and no "evp-<stage>…" name on a type whose limit it does not know;
//   - every Ref, GetAtt and Sub names a resource or parameter of the
//     template;
//   - no two stages that can create a resource of the same name: a stage
//     "X-w" names its resources "evp-X-w-…", so a name "evp-X-w-r" of stage X
//     is also a name of stage "X-w" when that stage has a resource "r" of
//     the same kind.
// Usage: validate-templates.mjs [--json] [--stage-length N] <template.json>…
// The stage of a template is read from its file name (evp-<stage>.template.json).
// Exit status: 0 valid, 1 findings, 2 usage or I/O error.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { loadAwsServiceSpecSync } = require("@aws-cdk/aws-service-spec");
const aslValidator = require("asl-validator");
const asls = require("amazon-states-language-service");

const args = process.argv.slice(2);
let json = false;
let stageLength = 16;
const files = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--json") json = true;
  else if (args[i] === "--stage-length") stageLength = Number(args[++i]);
  else files.push(args[i]);
}
if (files.length === 0 || !Number.isInteger(stageLength) || stageLength < 1) {
  console.error("usage: validate-templates.mjs [--json] [--stage-length N] <template.json>…");
  process.exit(2);
}

const db = loadAwsServiceSpecSync();
const specVersion = require("@aws-cdk/aws-service-spec/package.json").version;
const versions = {
  "@aws-cdk/aws-service-spec": specVersion,
  "asl-validator": require("asl-validator/package.json").version,
  "amazon-states-language-service": require("amazon-states-language-service/package.json").version,
};

// Types CloudFormation accepts that are not resources of the spec.
const notInSpec = new Map([
  ["AWS::CDK::Metadata", "CDK's analytics metadata, accepted by CloudFormation outside the resource specification"],
]);

// Physical name properties and their limits (AWS service quotas pages).
const nameRules = {
  "AWS::Lambda::Function": ["FunctionName", 64],
  "AWS::SQS::Queue": ["QueueName", 80],
  "AWS::SNS::Topic": ["TopicName", 256],
  "AWS::Events::Rule": ["Name", 64],
  "AWS::Scheduler::Schedule": ["Name", 64],
  "AWS::StepFunctions::StateMachine": ["StateMachineName", 80],
  "AWS::Logs::LogGroup": ["LogGroupName", 512],
  "AWS::DynamoDB::Table": ["TableName", 255],
  "AWS::IAM::Role": ["RoleName", 64],
  "AWS::IAM::Policy": ["PolicyName", 128],
  "AWS::CloudWatch::Alarm": ["AlarmName", 255],
  "AWS::SecretsManager::Secret": ["Name", 512],
  "AWS::SSM::Parameter": ["Name", 1011],
  "AWS::ApiGatewayV2::Api": ["Name", 128],
  "AWS::KMS::Alias": ["AliasName", 256],
  "AWS::S3::Bucket": ["BucketName", 63],
  "AWS::Scheduler::ScheduleGroup": ["Name", 64],
  "AWS::Events::EventBus": ["Name", 256],
  "AWS::Events::Archive": ["ArchiveName", 48],
  "AWS::Events::Connection": ["Name", 64],
  "AWS::Events::ApiDestination": ["Name", 64],
  "AWS::Pipes::Pipe": ["Name", 64],
  "AWS::CloudWatch::CompositeAlarm": ["AlarmName", 255],
  "AWS::CloudWatch::Dashboard": ["DashboardName", 255],
  "AWS::Logs::MetricFilter": ["FilterName", 512],
  "AWS::Logs::SubscriptionFilter": ["FilterName", 512],
  "AWS::Lambda::Alias": ["Name", 128],
  "AWS::Lambda::LayerVersion": ["LayerName", 140],
  "AWS::IAM::ManagedPolicy": ["ManagedPolicyName", 128],
  "AWS::Kinesis::Stream": ["Name", 128],
  "AWS::KinesisFirehose::DeliveryStream": ["DeliveryStreamName", 64],
};
// A property that names a resource the platform's way ("evp-<stage>…") on a
// type without a rule above is a finding (name_limit_unknown): add the
// type's limit, so resources others add are length-checked too.
// Another type's name property (a permission's FunctionName, a filter's
// LogGroupName) refers to that resource rather than naming this one.
const referenceProperties = new Set(Object.values(nameRules).map(([p]) => p).filter((p) => p !== "Name"));
const physicalNameProperty = (name) => (name === "Name" || /[A-Z][a-z]*Name$/.test(name)) && !referenceProperties.has(name);
// Names that share one namespace per account and region: a log group and a
// function's implicit log group, say, are told apart by their own prefixes.
const namespaceOf = (type) => type;

// Longest values a pseudo parameter can take, for name lengths.
const pseudoLength = { "AWS::Region": 14, "AWS::AccountId": 12, "AWS::Partition": 10, "AWS::URLSuffix": 16, "AWS::StackName": 128 };

const findings = [];
const counts = { templates: 0, resources: 0, types: new Set(), properties: 0, attributes: 0, stateMachines: 0, names: 0, edges: 0 };
const find = (file, code, where, message) => findings.push({ file: path.basename(file), code, where, message });

const isIntrinsic = (v) =>
  v !== null && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 1 &&
  (Object.keys(v)[0] === "Ref" || Object.keys(v)[0].startsWith("Fn::"));

function resourceSpec(type) {
  const found = db.lookup("resource", "cloudFormationType", "equals", type);
  return found.length ? found[0] : undefined;
}

// checkProps walks a value against the spec's property map: unknown and
// missing required names, recursively through typed definitions.
function checkProps(file, where, props, value) {
  if (value === undefined || isIntrinsic(value)) return;
  if (typeof value !== "object" || Array.isArray(value)) {
    find(file, "invalid_property_value", where, `expected an object, got ${JSON.stringify(value).slice(0, 80)}`);
    return;
  }
  for (const [name, v] of Object.entries(value)) {
    const prop = props[name];
    counts.properties++;
    if (!prop) {
      find(file, "unknown_property", `${where}.${name}`, `no property ${name} (known: ${Object.keys(props).sort().join(", ")})`);
      continue;
    }
    checkType(file, `${where}.${name}`, prop.type, v, prop.previousTypes);
  }
  for (const [name, prop] of Object.entries(props)) {
    if (prop.required && !(name in value)) find(file, "missing_required_property", `${where}.${name}`, `required property ${name} is missing`);
  }
}

function checkType(file, where, type, value, previousTypes) {
  if (value === undefined || value === null || isIntrinsic(value) || !type) return;
  switch (type.type) {
    case "ref": {
      const def = db.get("typeDefinition", type.reference.$ref);
      // A property that changed shape over time accepts its older forms.
      if (previousTypes?.length && (typeof value !== "object" || Array.isArray(value))) return;
      if (typeof value === "object" && !Array.isArray(value)) checkProps(file, where, def.properties, value);
      return;
    }
    case "array":
      if (Array.isArray(value)) value.forEach((e, i) => checkType(file, `${where}[${i}]`, type.element, e));
      return;
    case "map":
      if (typeof value === "object" && !Array.isArray(value)) for (const [k, e] of Object.entries(value)) checkType(file, `${where}.${k}`, type.element, e);
      return;
    default:
      return; // primitives, json, tags and unions: CloudFormation coerces scalars
  }
}

// refsOf lists the logical ids a value points at.
function refsOf(value, out = new Set()) {
  if (Array.isArray(value)) value.forEach((v) => refsOf(v, out));
  else if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      if (k === "Ref" && typeof v === "string" && !v.startsWith("AWS::")) out.add(v);
      else if (k === "Fn::GetAtt") out.add(Array.isArray(v) ? v[0] : String(v).split(".")[0]);
      else if (k === "Fn::Sub") {
        const s = Array.isArray(v) ? v[0] : v;
        const vars = Array.isArray(v) ? v[1] || {} : {};
        for (const m of String(s).matchAll(/\$\{([^}!]+)\}/g)) {
          const id = m[1].split(".")[0];
          if (!id.startsWith("AWS::") && !(id in vars)) out.add(id);
        }
        if (Array.isArray(v)) refsOf(v[1], out);
      } else refsOf(v, out);
    }
  }
  return out;
}

function getAtts(value, out = []) {
  if (Array.isArray(value)) value.forEach((v) => getAtts(v, out));
  else if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      if (k === "Fn::GetAtt") out.push(Array.isArray(v) ? v : String(v).split(/\.(.+)/).slice(0, 2));
      else getAtts(v, out);
    }
  }
  return out;
}

// placeholder is what a token stands for when a definition is resolved: an
// ARN of the right service for the resource it names.
function placeholder(resources, id, attr) {
  const type = resources[id]?.Type || "";
  const svc = { "AWS::Lambda::Function": "lambda:us-east-1:123456789012:function:", "AWS::StepFunctions::StateMachine": "states:us-east-1:123456789012:stateMachine:", "AWS::SQS::Queue": "sqs:us-east-1:123456789012:", "AWS::SNS::Topic": "sns:us-east-1:123456789012:", "AWS::DynamoDB::Table": "dynamodb:us-east-1:123456789012:table/" }[type];
  if (attr === "QueueUrl" || (type === "AWS::SQS::Queue" && !attr)) return "https://sqs.us-east-1.amazonaws.com/123456789012/" + id;
  if (svc) return "arn:aws:" + svc + id;
  return "placeholder-" + id + (attr ? "-" + attr : "");
}
const pseudo = { "AWS::Region": "us-east-1", "AWS::AccountId": "123456789012", "AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com", "AWS::StackName": "stack" };

// resolve turns an intrinsic string into a plain one with placeholders.
function resolve(resources, v) {
  if (typeof v === "string") return v;
  if (!v || typeof v !== "object") return String(v);
  if ("Ref" in v) return pseudo[v.Ref] ?? placeholder(resources, v.Ref);
  if ("Fn::GetAtt" in v) {
    const [id, attr] = Array.isArray(v["Fn::GetAtt"]) ? v["Fn::GetAtt"] : v["Fn::GetAtt"].split(".");
    return placeholder(resources, id, attr);
  }
  if ("Fn::Join" in v) {
    const [sep, parts] = v["Fn::Join"];
    return parts.map((p) => resolve(resources, p)).join(sep);
  }
  if ("Fn::Sub" in v) {
    const [s, vars] = Array.isArray(v["Fn::Sub"]) ? v["Fn::Sub"] : [v["Fn::Sub"], {}];
    return s.replace(/\$\{([^}]+)\}/g, (_, name) => {
      if (name.startsWith("!")) return "${" + name.slice(1) + "}";
      if (vars && name in vars) return resolve(resources, vars[name]);
      if (name in pseudo) return pseudo[name];
      const [id, attr] = name.split(/\.(.+)/);
      return placeholder(resources, id, attr);
    });
  }
  throw new Error("cannot resolve " + JSON.stringify(v).slice(0, 80));
}

// nameLength is a name's length at the longest stage name: the stage's own
// name in it counts as stageLength characters, pseudo parameters at their
// longest.
function nameLength(v, stage) {
  const grow = (s) => {
    let n = s.length;
    const marker = "evp-" + stage;
    for (let i = s.indexOf(marker); i >= 0; i = s.indexOf(marker, i + 1)) n += stageLength - stage.length;
    return n;
  };
  if (typeof v === "string") return grow(v);
  if (v && typeof v === "object" && "Fn::Join" in v) {
    const [sep, parts] = v["Fn::Join"];
    const lit = parts.map((p) => (typeof p === "string" ? p : "")).join(sep);
    return grow(lit) + parts.reduce((n, p) => n + (typeof p === "string" ? 0 : pseudoLength[p?.Ref] ?? 0), 0);
  }
  return undefined;
}

function checkStateMachine(file, id, resources, props) {
  counts.stateMachines++;
  let text;
  try {
    text = resolve(resources, props.DefinitionString ?? JSON.stringify(props.Definition));
    for (const [k, v] of Object.entries(props.DefinitionSubstitutions || {})) text = text.split("${" + k + "}").join(resolve(resources, v));
  } catch (e) {
    find(file, "unresolvable_state_machine", id, e.message);
    return;
  }
  let def;
  try {
    def = JSON.parse(text);
  } catch (e) {
    find(file, "invalid_state_machine_json", id, e.message);
    return;
  }
  const res = aslValidator(def);
  if (!res.isValid) find(file, "invalid_state_machine", id, "asl-validator: " + res.errorsText("; "));
  const service = asls.getLanguageService({});
  const doc = asls.TextDocument.create(`file:///${id}.asl.json`, "json", 0, text);
  const diags = service.doValidation(doc, service.parseJSONDocument(doc), { ignoreComments: false });
  return diags.then((list) => {
    const errors = list.filter((d) => d.severity === 1);
    if (errors.length) find(file, "invalid_state_machine_asls", id, "amazon-states-language-service: " + errors.map((d) => `${d.message} (line ${d.range.start.line + 1})`).join("; "));
  });
}

function checkCycles(file, resources, parameters) {
  const edges = {};
  for (const [id, r] of Object.entries(resources)) {
    const deps = refsOf(r.Properties);
    for (const d of [].concat(r.DependsOn || [])) deps.add(d);
    refsOf(r.Condition, deps);
    edges[id] = [...deps].filter((d) => d in resources);
    counts.edges += edges[id].length;
    for (const d of deps) if (!(d in resources) && !(d in parameters)) find(file, "unknown_reference", id, `refers to ${d}, which is neither a resource nor a parameter of the template`);
  }
  const state = {};
  const stack = [];
  const visit = (id) => {
    state[id] = 1;
    stack.push(id);
    for (const d of edges[id]) {
      if (state[d] === 1) {
        find(file, "dependency_cycle", id, "cycle: " + stack.slice(stack.indexOf(d)).concat(d).join(" → "));
      } else if (!state[d]) visit(d);
    }
    stack.pop();
    state[id] = 2;
  };
  for (const id of Object.keys(resources)) if (!state[id]) visit(id);
}

const namesByNamespace = new Map();

async function checkTemplate(file) {
  const stage = path.basename(file).replace(/^evp-/, "").replace(/\.template\.json$/, "");
  const t = JSON.parse(fs.readFileSync(file, "utf8"));
  const resources = t.Resources || {};
  counts.templates++;
  const pending = [];
  for (const [id, r] of Object.entries(resources)) {
    counts.resources++;
    counts.types.add(r.Type);
    if (notInSpec.has(r.Type) || r.Type.startsWith("Custom::") || r.Type === "AWS::CloudFormation::CustomResource") continue;
    const spec = resourceSpec(r.Type);
    if (!spec) {
      find(file, "unknown_resource_type", id, `${r.Type} is not a CloudFormation resource type (spec ${specVersion})`);
      continue;
    }
    checkProps(file, `${id}.Properties`, spec.properties, r.Properties || {});
    if (r.Type === "AWS::StepFunctions::StateMachine") pending.push(checkStateMachine(file, id, resources, r.Properties || {}));
    const rule = nameRules[r.Type];
    if (!rule) {
      for (const [k, v] of Object.entries(r.Properties || {})) {
        if (physicalNameProperty(k) && typeof v === "string" && v.startsWith("evp-" + stage))
          find(file, "name_limit_unknown", `${id}.Properties.${k}`, `${r.Type} is named ${JSON.stringify(v)}, but the validator knows no length limit for ${r.Type}.${k}: add it to nameRules (scripts/validate/validate-templates.mjs)`);
      }
    }
    const name = rule && r.Properties?.[rule[0]];
    if (name !== undefined) {
      counts.names++;
      const n = nameLength(name, stage);
      if (n !== undefined && n > rule[1]) find(file, "name_too_long", `${id}.Properties.${rule[0]}`, `${n} characters with a ${stageLength}-character stage name; AWS allows ${rule[1]}`);
      if (typeof name === "string" && name.includes("evp-" + stage)) {
        const ns = namespaceOf(r.Type);
        if (!namesByNamespace.has(ns)) namesByNamespace.set(ns, new Map());
        namesByNamespace.get(ns).set(name.replace("evp-" + stage, "evp-{stage}"), { file, id, stage });
      }
    }
  }
  // Outputs and resources may GetAtt: the attribute must exist.
  const all = getAtts(resources).concat(getAtts(t.Outputs || {}));
  for (const [id, attr] of all) {
    counts.attributes++;
    const r = resources[id];
    if (!r) continue; // reported as unknown_reference
    if (r.Type.startsWith("Custom::") || notInSpec.has(r.Type)) continue;
    const spec = resourceSpec(r.Type);
    if (spec && !(attr in spec.attributes)) find(file, "unknown_attribute", `${id}.${attr}`, `${r.Type} has no attribute ${attr} (has: ${Object.keys(spec.attributes).sort().join(", ")})`);
  }
  checkCycles(file, resources, t.Parameters || {});
  await Promise.all(pending);
}

// checkCollisions: with the stage part written "{stage}", a name N of one
// stage is a name of stage "{stage}-w" as well when N = "…evp-{stage}-w-R"
// and R (or, for R empty, "evp-{stage}") is a name of that kind.
function checkCollisions() {
  for (const [ns, names] of namesByNamespace) {
    const list = [...names.keys()];
    for (const a of list) {
      const i = a.indexOf("evp-{stage}");
      const before = a.slice(0, i);
      const rest = a.slice(i + "evp-{stage}".length);
      if (!rest.startsWith("-")) continue; // "/" cannot be part of a stage name
      for (const b of list) {
        if (a === b) continue;
        const j = b.indexOf("evp-{stage}");
        if (b.slice(0, j) !== before) continue;
        const restB = b.slice(j + "evp-{stage}".length);
        const collides = restB === "" ? rest.length > 1 : restB.startsWith("-") && rest.endsWith(restB) && rest.length > restB.length;
        if (collides) {
          const w = rest.slice(1, rest.length - restB.length);
          const { id } = names.get(a);
          find(names.get(a).file, "name_collision", id, `${ns} ${a.replace("{stage}", "X")} of stage X is also ${b.replace("{stage}", "X-" + w)} of stage X-${w}`);
        }
      }
    }
  }
}

try {
  for (const f of files) await checkTemplate(f);
  checkCollisions();
} catch (e) {
  console.error("validate-templates:", e.stack || e.message);
  process.exit(2);
}
const summary = {
  ok: findings.length === 0,
  versions,
  stageLength,
  counts: { ...counts, types: counts.types.size },
  findings,
};
if (json) console.log(JSON.stringify(summary, null, 2));
else {
  for (const f of findings) console.log(`${f.file}: ${f.code}: ${f.where}: ${f.message}`);
  const c = summary.counts;
  console.log(
    `${findings.length ? "FAIL" : "ok"}: ${c.templates} templates, ${c.resources} resources of ${c.types} types, ${c.properties} properties, ` +
      `${c.attributes} attribute references, ${c.stateMachines} state machines (asl-validator ${versions["asl-validator"]}, amazon-states-language-service ${versions["amazon-states-language-service"]}), ` +
      `${c.edges} dependencies, ${c.names} physical names at a ${stageLength}-character stage; spec @aws-cdk/aws-service-spec ${specVersion}; ${findings.length} findings`,
  );
}
process.exit(findings.length ? 1 : 0);
