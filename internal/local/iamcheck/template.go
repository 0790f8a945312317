package iamcheck

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/siteswarm/eventplatform/internal/observe/iamcalls"
)

// Template is a synthesized CloudFormation template.
type Template struct {
	Resources map[string]Resource `json:"Resources"`
}

// Resource is one resource of a template.
type Resource struct {
	Type       string         `json:"Type"`
	Properties map[string]any `json:"Properties"`
}

// Stage is what the recorded ARNs' placeholders stand for on the stage
// the template deploys.
type Stage struct {
	// Prefix names the stage's resources ("evp-dev"), ParamPrefix its SSM
	// parameters ("/evp/dev").
	Prefix, ParamPrefix string
	// Partition, Region and Account of the stage (from cdk.out's
	// manifest; an environment-agnostic stage gets DefaultRegion and
	// DefaultAccount).
	Partition, Region, Account string
}

// Stand-ins for an environment-agnostic stage (the dev stage): any
// account and region give the same decisions, as every ARN of the
// template is built from them.
const (
	DefaultRegion  = "us-east-1"
	DefaultAccount = "123456789012"
)

// LoadTemplate reads a stage's template (cdk.out/<stage>/evp-<stage>.template.json)
// and the stage it deploys (its stack's environment from manifest.json
// beside it).
func LoadTemplate(path string) (*Template, Stage, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, Stage{}, err
	}
	var tpl Template
	if err := json.Unmarshal(raw, &tpl); err != nil {
		return nil, Stage{}, fmt.Errorf("%s: %w", path, err)
	}
	stack := strings.TrimSuffix(filepath.Base(path), ".template.json")
	name, ok := strings.CutPrefix(stack, "evp-")
	if !ok {
		return nil, Stage{}, fmt.Errorf("%s: not a stage's template (evp-<stage>.template.json)", path)
	}
	st := Stage{Prefix: stack, ParamPrefix: "/evp/" + name, Partition: "aws", Region: DefaultRegion, Account: DefaultAccount}
	var manifest struct {
		Artifacts map[string]struct {
			Environment string `json:"environment"`
		} `json:"artifacts"`
	}
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(path), "manifest.json")); err == nil && json.Unmarshal(b, &manifest) == nil {
		// aws://<account>/<region>, "unknown-…" when agnostic.
		if env, ok := strings.CutPrefix(manifest.Artifacts[stack].Environment, "aws://"); ok {
			account, region, _ := strings.Cut(env, "/")
			if account != "" && !strings.HasPrefix(account, "unknown") {
				st.Account = account
			}
			if region != "" && !strings.HasPrefix(region, "unknown") {
				st.Region = region
			}
		}
	}
	return &tpl, st, nil
}

// ofType lists the logical ids of a type, sorted.
func (t *Template) ofType(typ string) []string {
	var ids []string
	for id, r := range t.Resources {
		if r.Type == typ {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// resolver evaluates the template's intrinsic functions the way
// CloudFormation would on the stage, with the names the template gives
// (physical names where it sets them, the logical id where it leaves the
// name to CloudFormation: a role, the bucket).
type resolver struct {
	tpl   *Template
	stage Stage
}

func (r resolver) arn(service, rest string) string {
	return "arn:" + r.stage.Partition + ":" + service + ":" + r.stage.Region + ":" + r.stage.Account + ":" + rest
}

func (r resolver) pseudo(name string) (string, bool) {
	switch name {
	case "AWS::Region":
		return r.stage.Region, true
	case "AWS::AccountId":
		return r.stage.Account, true
	case "AWS::Partition":
		return r.stage.Partition, true
	case "AWS::URLSuffix":
		return "amazonaws.com", true
	case "AWS::StackName":
		return r.stage.Prefix, true
	}
	return "", false
}

// name is a resource's physical name: its name property when the
// template sets one (resolved), else its logical id (lower case for a
// bucket, whose names are).
func (r resolver) name(id string) (string, error) {
	res, ok := r.tpl.Resources[id]
	if !ok {
		return "", fmt.Errorf("no resource %s", id)
	}
	prop := map[string]string{
		"AWS::DynamoDB::Table": "TableName", "AWS::SQS::Queue": "QueueName", "AWS::Lambda::Function": "FunctionName",
		"AWS::SNS::Topic": "TopicName", "AWS::SSM::Parameter": "Name", "AWS::StepFunctions::StateMachine": "StateMachineName",
		"AWS::S3::Bucket": "BucketName", "AWS::IAM::Role": "RoleName", "AWS::SecretsManager::Secret": "Name",
		"AWS::Events::Rule": "Name", "AWS::Logs::LogGroup": "LogGroupName",
	}[res.Type]
	if v, ok := res.Properties[prop]; ok && prop != "" {
		return r.value(v)
	}
	if res.Type == "AWS::S3::Bucket" {
		return strings.ToLower(id), nil
	}
	return id, nil
}

// ref is what Ref returns for a resource.
func (r resolver) ref(id string) (string, error) {
	if p, ok := r.pseudo(id); ok {
		return p, nil
	}
	res, ok := r.tpl.Resources[id]
	if !ok {
		return "", fmt.Errorf("Ref %s: no such resource", id)
	}
	name, err := r.name(id)
	if err != nil {
		return "", err
	}
	switch res.Type {
	case "AWS::SQS::Queue":
		return "https://sqs." + r.stage.Region + ".amazonaws.com/" + r.stage.Account + "/" + name, nil
	case "AWS::SNS::Topic":
		return r.arn("sns", name), nil
	case "AWS::SecretsManager::Secret":
		// Secrets Manager appends six random characters to a secret's ARN.
		return r.arn("secretsmanager", "secret:"+name+"-AbCdEf"), nil
	case "AWS::StepFunctions::StateMachine":
		return r.arn("states", "stateMachine:"+name), nil
	case "AWS::Lambda::EventSourceMapping":
		// The mapping's UUID, known after deployment: the recording names a
		// mapping by its function (iamcalls.Mapping), so does the check.
		return r.value(res.Properties["FunctionName"])
	}
	return name, nil
}

// getAtt is what Fn::GetAtt returns.
func (r resolver) getAtt(id, attr string) (string, error) {
	res, ok := r.tpl.Resources[id]
	if !ok {
		return "", fmt.Errorf("Fn::GetAtt %s.%s: no such resource", id, attr)
	}
	name, err := r.name(id)
	if err != nil {
		return "", err
	}
	switch res.Type + "." + attr {
	case "AWS::DynamoDB::Table.Arn":
		return r.arn("dynamodb", "table/"+name), nil
	case "AWS::DynamoDB::Table.StreamArn":
		return r.arn("dynamodb", "table/"+name+"/stream/stream"), nil
	case "AWS::SQS::Queue.Arn":
		return r.arn("sqs", name), nil
	case "AWS::SQS::Queue.QueueName":
		return name, nil
	case "AWS::SQS::Queue.QueueUrl":
		return r.ref(id)
	case "AWS::S3::Bucket.Arn":
		return "arn:" + r.stage.Partition + ":s3:::" + name, nil
	case "AWS::S3::Bucket.DomainName", "AWS::S3::Bucket.RegionalDomainName":
		return name + ".s3.amazonaws.com", nil
	case "AWS::Lambda::Function.Arn":
		return r.arn("lambda", "function:"+name), nil
	case "AWS::IAM::Role.Arn":
		return "arn:" + r.stage.Partition + ":iam::" + r.stage.Account + ":role/" + name, nil
	case "AWS::SNS::Topic.TopicArn":
		return r.arn("sns", name), nil
	case "AWS::SNS::Topic.TopicName":
		return name, nil
	case "AWS::StepFunctions::StateMachine.Arn":
		return r.arn("states", "stateMachine:"+name), nil
	case "AWS::StepFunctions::StateMachine.Name":
		return name, nil
	case "AWS::Events::Rule.Arn":
		return r.arn("events", "rule/"+name), nil
	case "AWS::Lambda::EventSourceMapping.EventSourceMappingArn":
		fn, err := r.ref(id)
		if err != nil {
			return "", err
		}
		return r.arn("lambda", "event-source-mapping:"+fn), nil
	case "AWS::Logs::LogGroup.Arn":
		return r.arn("logs", "log-group:"+name+":*"), nil
	case "AWS::KMS::Key.Arn":
		return r.arn("kms", "key/"+name), nil
	case "AWS::SecretsManager::Secret.Id":
		return r.ref(id)
	case "AWS::ApiGatewayV2::Api.ApiId", "AWS::ApiGatewayV2::Api.ApiEndpoint":
		return id, nil
	}
	return "", fmt.Errorf("Fn::GetAtt %s.%s (%s) is not resolved by the IAM check", id, attr, res.Type)
}

// value resolves a property value to a string.
func (r resolver) value(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case float64:
		return fmt.Sprint(x), nil
	case bool:
		return fmt.Sprint(x), nil
	case map[string]any:
		if ref, ok := x["Ref"].(string); ok {
			return r.ref(ref)
		}
		if g, ok := x["Fn::GetAtt"].([]any); ok && len(g) == 2 {
			id, _ := g[0].(string)
			attr, _ := g[1].(string)
			return r.getAtt(id, attr)
		}
		if g, ok := x["Fn::GetAtt"].(string); ok {
			id, attr, _ := strings.Cut(g, ".")
			return r.getAtt(id, attr)
		}
		if j, ok := x["Fn::Join"].([]any); ok && len(j) == 2 {
			sep, _ := j[0].(string)
			parts, _ := j[1].([]any)
			out := make([]string, len(parts))
			for i, p := range parts {
				s, err := r.value(p)
				if err != nil {
					return "", err
				}
				out[i] = s
			}
			return strings.Join(out, sep), nil
		}
		if s, ok := x["Fn::Sub"]; ok {
			return r.sub(s)
		}
		if s, ok := x["Fn::Select"].([]any); ok && len(s) == 2 {
			idx, err := r.value(s[0])
			if err != nil {
				return "", err
			}
			list, err := r.list(s[1])
			if err != nil {
				return "", err
			}
			var i int
			if _, err := fmt.Sscan(idx, &i); err != nil || i < 0 || i >= len(list) {
				return "", fmt.Errorf("Fn::Select %s of %d", idx, len(list))
			}
			return list[i], nil
		}
	}
	return "", fmt.Errorf("cannot resolve %v", v)
}

// list resolves a list value (a literal list or Fn::Split).
func (r resolver) list(v any) ([]string, error) {
	if sp, ok := v.(map[string]any)["Fn::Split"].([]any); ok && len(sp) == 2 {
		sep, _ := sp[0].(string)
		s, err := r.value(sp[1])
		if err != nil {
			return nil, err
		}
		return strings.Split(s, sep), nil
	}
	items, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("not a list: %v", v)
	}
	out := make([]string, len(items))
	for i, it := range items {
		s, err := r.value(it)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// sub resolves Fn::Sub: "${AWS::Region}", "${Logical}", "${Logical.Attr}"
// and the form with a variable map.
func (r resolver) sub(v any) (string, error) {
	tmpl, vars := "", map[string]any{}
	switch x := v.(type) {
	case string:
		tmpl = x
	case []any:
		if len(x) != 2 {
			return "", fmt.Errorf("Fn::Sub %v", v)
		}
		tmpl, _ = x[0].(string)
		vars, _ = x[1].(map[string]any)
	}
	var b strings.Builder
	for {
		i := strings.Index(tmpl, "${")
		if i < 0 {
			b.WriteString(tmpl)
			return b.String(), nil
		}
		j := strings.Index(tmpl[i:], "}")
		if j < 0 {
			return "", fmt.Errorf("Fn::Sub %q", tmpl)
		}
		b.WriteString(tmpl[:i])
		name := tmpl[i+2 : i+j]
		var s string
		var err error
		switch {
		case strings.HasPrefix(name, "!"):
			s = "${" + name[1:] + "}"
		case vars[name] != nil:
			s, err = r.value(vars[name])
		case strings.Contains(name, ".") && !strings.HasPrefix(name, "AWS::"):
			id, attr, _ := strings.Cut(name, ".")
			s, err = r.getAtt(id, attr)
		default:
			s, err = r.ref(name)
		}
		if err != nil {
			return "", err
		}
		b.WriteString(s)
		tmpl = tmpl[i+j+1:]
	}
}

// policy resolves a policy document's intrinsic functions into plain
// JSON values.
func (r resolver) policy(doc any) (any, error) {
	switch x := doc.(type) {
	case map[string]any:
		if isIntrinsic(x) {
			return r.value(x)
		}
		out := make(map[string]any, len(x))
		for k, v := range x {
			rv, err := r.policy(v)
			if err != nil {
				return nil, err
			}
			out[k] = rv
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, v := range x {
			rv, err := r.policy(v)
			if err != nil {
				return nil, err
			}
			out[i] = rv
		}
		return out, nil
	}
	return doc, nil
}

func isIntrinsic(m map[string]any) bool {
	if len(m) != 1 {
		return false
	}
	for k := range m {
		return k == "Ref" || strings.HasPrefix(k, "Fn::")
	}
	return false
}

// placeholders resolves a recorded ARN's placeholders for the stage
// (bucket: the archive bucket's physical name).
func (r resolver) placeholders(s, bucket string) string {
	return strings.NewReplacer(
		iamcalls.PartitionVar, r.stage.Partition, iamcalls.RegionVar, r.stage.Region, iamcalls.AccountVar, r.stage.Account,
		iamcalls.StageVar, r.stage.Prefix, iamcalls.BucketVar, bucket, iamcalls.ParamPrefixVar, r.stage.ParamPrefix,
	).Replace(s)
}
