// Evaluates authorization requests with @cloud-copilot/iam-simulate, an IAM
// policy evaluator nobody here wrote (pinned in package.json): the IAM
// check (internal/local/iamcheck, `make iam-check`) sends every distinct
// call the functions made, with the synthesized template's identity
// policies of the caller's role and the resource's policy, and gets each
// decision back with the statements that decided it.
//
// stdin:  {"principals": {"<role ARN>": [{"name", "policy"}]},
//          "resourcePolicies": {"<key>": policy},
//          "requests": [{"id", "principal", "action", "resource", "account",
//                        "resourcePolicy": "<key>"|null, "context": {…}}]}
// stdout: {"results": [{"id", "decision", "errors"?, "allow": [used], "deny": [used]}]}
//         used: {"policy", "statement" (1-based index), "actions", "resources"}
import { runSimulation } from '@cloud-copilot/iam-simulate'

const chunks = []
for await (const c of process.stdin) chunks.push(c)
const input = JSON.parse(Buffer.concat(chunks).toString('utf8'))

// matched lists the patterns of a statement element that matched the
// request (the explain holds one object or a list).
const matched = (list, field) => [].concat(list ?? []).filter((x) => x.matches).map((x) => x[field])

const used = (statements, policy) =>
  (statements ?? []).map((s) => ({
    policy: s.policyId ?? policy,
    statement: Number(s.explain?.identifier ?? 0),
    actions: matched(s.explain?.actions, 'action'),
    resources: matched(s.explain?.resources, 'resource'),
  }))

const results = []
for (const r of input.requests) {
  const simulation = {
    identityPolicies: input.principals[r.principal] ?? [],
    serviceControlPolicies: [],
    resourceControlPolicies: [],
    request: {
      action: r.action,
      principal: r.principal,
      resource: { accountId: r.account, resource: r.resource },
      contextVariables: r.context ?? {},
    },
  }
  if (r.resourcePolicy) simulation.resourcePolicy = input.resourcePolicies[r.resourcePolicy]
  let out
  try {
    out = await runSimulation(simulation, {})
  } catch (err) {
    results.push({ id: r.id, decision: 'Error', errors: String(err?.stack ?? err) })
    continue
  }
  if (out.resultType === 'error') {
    results.push({ id: r.id, decision: 'Error', errors: JSON.stringify(out.errors) })
    continue
  }
  const analysis = out.resultType === 'single' ? out.result.analysis : out.results?.[0]?.analysis
  const id = analysis?.identityAnalysis
  const res = analysis?.resourceAnalysis
  results.push({
    id: r.id,
    decision: out.overallResult,
    allow: [...used(id?.allowStatements), ...used(res?.allowStatements, 'resource policy')],
    deny: [...used(id?.denyStatements), ...used(res?.denyStatements, 'resource policy')],
  })
}
process.stdout.write(JSON.stringify({ results }))
