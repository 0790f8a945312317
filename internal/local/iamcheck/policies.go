package iamcheck

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// principal is a caller the template deploys: a function or a state
// machine, with its execution role's identity policies.
type principal struct {
	// Name is the caller as the recording names it ("ingest",
	// "states:replay"); Physical as the stage does.
	Name, Physical string
	Role           string // the role's logical id
	RoleARN        string
	Policies       []namedPolicy
	// Env is a function's environment (resolved).
	Env map[string]string
	// Mapped are the queues its event source mappings poll (ARNs).
	Mapped map[string]bool
}

type namedPolicy struct {
	Name   string `json:"name"`
	Policy policy `json:"policy"`
}

// policy is a resolved policy document with its statements as a list.
type policy struct {
	Version   string      `json:"Version"`
	Statement []statement `json:"Statement"`
}

type statement = map[string]any

// normalize makes a document's Statement a list (the simulator's
// statement numbers are its indexes).
func normalize(doc any) (policy, error) {
	m, ok := doc.(map[string]any)
	if !ok {
		return policy{}, fmt.Errorf("policy document %v", doc)
	}
	p := policy{Version: "2012-10-17"}
	if v, ok := m["Version"].(string); ok {
		p.Version = v
	}
	switch s := m["Statement"].(type) {
	case []any:
		for _, st := range s {
			if sm, ok := st.(map[string]any); ok {
				p.Statement = append(p.Statement, sm)
			}
		}
	case map[string]any:
		p.Statement = []statement{s}
	}
	return p, nil
}

// strs reads a statement element that is a string or a list of strings.
func strs(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, it := range x {
			if s, ok := it.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// principals finds every function and state machine of the template
// with its role's policies resolved.
func (r resolver) principals() (map[string]*principal, []string, error) {
	out := map[string]*principal{}
	var problems []string
	add := func(name, physical string, roleRef any) {
		roleID := refID(roleRef)
		if roleID == "" {
			problems = append(problems, fmt.Sprintf("%s: its role %v is not a role of the template", physical, roleRef))
			return
		}
		arn, err := r.getAtt(roleID, "Arn")
		if err != nil {
			problems = append(problems, err.Error())
			return
		}
		pols, err := r.rolePolicies(roleID)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", physical, err))
			return
		}
		out[name] = &principal{Name: name, Physical: physical, Role: roleID, RoleARN: arn, Policies: pols}
	}
	for _, id := range r.tpl.ofType("AWS::Lambda::Function") {
		res := r.tpl.Resources[id]
		physical, err := r.name(id)
		if err != nil {
			return nil, nil, err
		}
		name, ok := strings.CutPrefix(physical, r.stage.Prefix+"-")
		if !ok {
			continue // CDK's own handlers (log retention, auto-delete)
		}
		add(name, physical, res.Properties["Role"])
		if p := out[name]; p != nil {
			p.Env = map[string]string{}
			if e, ok := res.Properties["Environment"].(map[string]any); ok {
				vars, _ := e["Variables"].(map[string]any)
				for k, v := range vars {
					s, err := r.value(v)
					if err != nil {
						return nil, nil, fmt.Errorf("%s: %s: %w", physical, k, err)
					}
					p.Env[k] = s
				}
			}
		}
	}
	for _, id := range r.tpl.ofType("AWS::Lambda::EventSourceMapping") {
		props := r.tpl.Resources[id].Properties
		fn, err1 := r.value(props["FunctionName"])
		queue, err2 := r.value(props["EventSourceArn"])
		if err1 != nil || err2 != nil {
			continue
		}
		if p := out[strings.TrimPrefix(fn, r.stage.Prefix+"-")]; p != nil {
			if p.Mapped == nil {
				p.Mapped = map[string]bool{}
			}
			p.Mapped[queue] = true
		}
	}
	for _, id := range r.tpl.ofType("AWS::StepFunctions::StateMachine") {
		physical, err := r.name(id)
		if err != nil {
			return nil, nil, err
		}
		if name, ok := strings.CutPrefix(physical, r.stage.Prefix+"-"); ok {
			add("states:"+name, physical, r.tpl.Resources[id].Properties["RoleArn"])
		}
	}
	return out, problems, nil
}

// refID is the logical id a Ref or Fn::GetAtt names ("" for anything
// else).
func refID(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	if s, ok := m["Ref"].(string); ok {
		return s
	}
	if g, ok := m["Fn::GetAtt"].([]any); ok && len(g) > 0 {
		s, _ := g[0].(string)
		return s
	}
	return ""
}

// rolePolicies are a role's identity policies: the template's
// AWS::IAM::Policy resources attached to it and its inline policies. A
// managed policy cannot be read from the template: it is refused.
func (r resolver) rolePolicies(roleID string) ([]namedPolicy, error) {
	role := r.tpl.Resources[roleID]
	if m, ok := role.Properties["ManagedPolicyArns"].([]any); ok && len(m) > 0 {
		return nil, fmt.Errorf("role %s has managed policies %v, which the template does not hold", roleID, m)
	}
	var out []namedPolicy
	if inline, ok := role.Properties["Policies"].([]any); ok {
		for _, it := range inline {
			m, _ := it.(map[string]any)
			doc, err := r.policy(m["PolicyDocument"])
			if err != nil {
				return nil, err
			}
			p, err := normalize(doc)
			if err != nil {
				return nil, err
			}
			name, _ := m["PolicyName"].(string)
			out = append(out, namedPolicy{Name: roleID + "/" + name, Policy: p})
		}
	}
	for _, id := range r.tpl.ofType("AWS::IAM::Policy") {
		res := r.tpl.Resources[id]
		attached := false
		for _, ref := range asList(res.Properties["Roles"]) {
			if refID(ref) == roleID {
				attached = true
			}
		}
		if !attached {
			continue
		}
		doc, err := r.policy(res.Properties["PolicyDocument"])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		p, err := normalize(doc)
		if err != nil {
			return nil, err
		}
		out = append(out, namedPolicy{Name: id, Policy: p})
	}
	return out, nil
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// resourcePolicies are the template's resource policies by resourceKey:
// Lambda permissions (one statement each), queue, bucket, topic and
// secret policies.
func (r resolver) resourcePolicies() (map[string]policy, error) {
	out := map[string]policy{}
	add := func(key string, st ...statement) {
		p := out[key]
		p.Version = "2012-10-17"
		p.Statement = append(p.Statement, st...)
		out[key] = p
	}
	for _, id := range r.tpl.ofType("AWS::Lambda::Permission") {
		props := r.tpl.Resources[id].Properties
		fn, err := r.value(props["FunctionName"])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		fnName := fn[strings.LastIndex(fn, ":")+1:]
		if i := strings.Index(fn, ":function:"); i >= 0 {
			fnName, _, _ = strings.Cut(fn[i+len(":function:"):], ":")
		}
		st := statement{"Sid": id, "Effect": "Allow", "Resource": r.arn("lambda", "function:"+fnName)}
		action, err := r.value(props["Action"])
		if err != nil {
			return nil, err
		}
		st["Action"] = action
		who, err := r.value(props["Principal"])
		if err != nil {
			return nil, err
		}
		switch {
		case who == "*":
			st["Principal"] = "*"
		case strings.HasSuffix(who, ".amazonaws.com"):
			st["Principal"] = map[string]any{"Service": who}
		case accountID.MatchString(who):
			st["Principal"] = map[string]any{"AWS": "arn:" + r.stage.Partition + ":iam::" + who + ":root"}
		default:
			st["Principal"] = map[string]any{"AWS": who}
		}
		cond := map[string]any{}
		if v, ok := props["SourceArn"]; ok {
			s, err := r.value(v)
			if err != nil {
				return nil, err
			}
			cond["ArnLike"] = map[string]any{"aws:SourceArn": s}
		}
		if v, ok := props["SourceAccount"]; ok {
			s, err := r.value(v)
			if err != nil {
				return nil, err
			}
			cond["StringEquals"] = map[string]any{"aws:SourceAccount": s}
		}
		if len(cond) > 0 {
			st["Condition"] = cond
		}
		add("lambda:"+fnName, st)
	}
	for _, c := range []struct{ typ, targets, doc, prefix string }{
		{"AWS::SQS::QueuePolicy", "Queues", "PolicyDocument", "sqs:"},
		{"AWS::S3::BucketPolicy", "Bucket", "PolicyDocument", "s3:"},
		{"AWS::SNS::TopicPolicy", "Topics", "PolicyDocument", "sns:"},
		{"AWS::SecretsManager::ResourcePolicy", "SecretId", "ResourcePolicy", "secret:"},
	} {
		for _, id := range r.tpl.ofType(c.typ) {
			props := r.tpl.Resources[id].Properties
			doc, err := r.policy(props[c.doc])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", id, err)
			}
			p, err := normalize(doc)
			if err != nil {
				return nil, err
			}
			targets := asList(props[c.targets])
			if targets == nil {
				targets = []any{props[c.targets]}
			}
			for _, t := range targets {
				v, err := r.value(t)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", id, err)
				}
				// Queues are named by URL, topics and secrets by ARN,
				// buckets by name: keyed by the last segment (or the ARN).
				key := v[strings.LastIndexAny(v, "/:")+1:]
				if c.prefix == "secret:" {
					key = v
				}
				add(c.prefix+key, p.Statement...)
			}
		}
	}
	return out, nil
}

var accountID = regexp.MustCompile(`^[0-9]{12}$`)

// resourceKey is the key of the resource policy that governs an ARN
// ("" for none).
func resourceKey(arn string) string {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) < 6 {
		return ""
	}
	switch parts[2] {
	case "lambda":
		if name, ok := strings.CutPrefix(parts[5], "function:"); ok {
			name, _, _ = strings.Cut(name, ":")
			return "lambda:" + name
		}
	case "sqs":
		return "sqs:" + parts[5]
	case "s3":
		bucket, _, _ := strings.Cut(parts[5], "/")
		return "s3:" + bucket
	case "sns":
		return "sns:" + parts[5]
	case "secretsmanager":
		return "secret:" + arn
	}
	return ""
}

// grants lists a policy's Allow statements as (statement, action,
// resource) pairs.
func grants(p namedPolicy) []Grant {
	var out []Grant
	for i, st := range p.Policy.Statement {
		if st["Effect"] != "Allow" {
			continue
		}
		_, conditional := st["Condition"]
		for _, a := range strs(st["Action"]) {
			for _, res := range strs(st["Resource"]) {
				out = append(out, Grant{Policy: p.Name, Statement: i + 1, Action: a, Resource: res, Conditional: conditional})
			}
		}
	}
	slices.SortFunc(out, func(a, b Grant) int { return strings.Compare(a.Action+a.Resource, b.Action+b.Resource) })
	return out
}
