package platform

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/stretchr/testify/require"
)

// template is the synthesized CloudFormation template, read in Go so the
// tests can follow references (Ref / Fn::GetAtt) between resources.
type template struct {
	Resources map[string]resource       `json:"Resources"`
	Outputs   map[string]map[string]any `json:"Outputs"`
}

type resource struct {
	Type           string         `json:"Type"`
	Properties     map[string]any `json:"Properties"`
	DeletionPolicy string         `json:"DeletionPolicy"`
	DependsOn      any            `json:"DependsOn"`
}

// statement is one IAM policy statement, normalised.
type statement struct {
	Effect    string
	Actions   []string
	Resources []any
	Principal any
	Condition any
}

func (t template) ofType(typ string) map[string]resource {
	out := map[string]resource{}
	for id, r := range t.Resources {
		if r.Type == typ {
			out[id] = r
		}
	}
	return out
}

// function finds a Lambda function by its physical name suffix.
func (s *synth) function(t *testing.T, name string) (string, resource) {
	t.Helper()
	want := s.p.Stage.Prefix() + "-" + name
	for id, r := range s.tpl.ofType("AWS::Lambda::Function") {
		if r.Properties["FunctionName"] == want {
			return id, r
		}
	}
	require.Failf(t, "function not found", "no AWS::Lambda::Function named %s", want)
	return "", resource{}
}

// roleOf is the logical id of a function's execution role.
func roleOf(t *testing.T, fn resource) string {
	t.Helper()
	id := refID(fn.Properties["Role"])
	require.NotEmpty(t, id, "function role is not a reference: %v", fn.Properties["Role"])
	return id
}

// statements returns every statement of every policy attached to a role
// (inline AWS::IAM::Policy resources and the role's own Policies).
func (s *synth) statements(roleID string) []statement {
	var out []statement
	for _, r := range s.tpl.ofType("AWS::IAM::Policy") {
		for _, role := range list(r.Properties["Roles"]) {
			if refID(role) == roleID {
				out = append(out, parseStatements(r.Properties["PolicyDocument"])...)
			}
		}
	}
	if role, ok := s.tpl.Resources[roleID]; ok {
		for _, pol := range list(role.Properties["Policies"]) {
			out = append(out, parseStatements(pol.(map[string]any)["PolicyDocument"])...)
		}
	}
	return out
}

func parseStatements(doc any) []statement {
	var out []statement
	for _, raw := range list(doc.(map[string]any)["Statement"]) {
		m := raw.(map[string]any)
		st := statement{Effect: str(m["Effect"]), Principal: m["Principal"], Condition: m["Condition"]}
		for _, a := range list(m["Action"]) {
			st.Actions = append(st.Actions, a.(string))
		}
		st.Resources = list(m["Resource"])
		out = append(out, st)
	}
	return out
}

// actionsOn collects, per resource logical id (or literal), the actions a
// role is allowed, e.g. {"IngestABC": ["lambda:InvokeFunction"]}.
func actionsOn(sts []statement) map[string][]string {
	out := map[string][]string{}
	for _, st := range sts {
		if st.Effect != "Allow" {
			continue
		}
		for _, r := range st.Resources {
			key := resourceKey(r)
			out[key] = append(out[key], st.Actions...)
		}
	}
	for k := range out {
		sort.Strings(out[k])
	}
	return out
}

// resourceKey names a policy resource: the referenced logical id, plus any
// literal suffix of a Fn::Join ("ArchiveBucket9D/payloads/*"), or the
// literal itself.
func resourceKey(r any) string {
	if id := refID(r); id != "" {
		return id
	}
	if m, ok := r.(map[string]any); ok {
		if j, ok := m["Fn::Join"]; ok {
			parts := j.([]any)[1].([]any)
			var b strings.Builder
			for _, part := range parts {
				if id := refID(part); id != "" {
					b.WriteString(id)
				} else if s, ok := part.(string); ok {
					b.WriteString(s)
				} else {
					b.WriteString("?")
				}
			}
			return b.String()
		}
	}
	if s, ok := r.(string); ok {
		return s
	}
	b, _ := json.Marshal(r)
	return string(b)
}

// refID returns X for {"Ref": X} and {"Fn::GetAtt": [X, …]}, else "".
func refID(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	if r, ok := m["Ref"].(string); ok {
		return r
	}
	if g, ok := m["Fn::GetAtt"].([]any); ok && len(g) > 0 {
		return g[0].(string)
	}
	return ""
}

func list(v any) []any {
	switch t := v.(type) {
	case nil:
		return nil
	case []any:
		return t
	default:
		return []any{t}
	}
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// num reads a JSON number (or numeric string) property.
func num(t *testing.T, v any) float64 {
	t.Helper()
	switch n := v.(type) {
	case float64:
		return n
	case string:
		var f float64
		require.NoError(t, json.Unmarshal([]byte(n), &f), "not a number: %q", n)
		return f
	}
	require.Failf(t, "not a number", "%v (%T)", v, v)
	return 0
}

// dig walks nested maps: dig(props, "A", "B") = props["A"]["B"].
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// jsiiMu serialises the tests' calls into the jsii runtime, which is not
// safe for concurrent use; everything else the tests read is plain Go.
var jsiiMu sync.Mutex

// idOf is the logical id of a construct's CloudFormation resource.
func (s *synth) idOf(c constructs.IConstruct) string {
	jsiiMu.Lock()
	defer jsiiMu.Unlock()
	el := c.Node().DefaultChild().(awscdk.CfnElement)
	switch v := s.p.Stack.Resolve(el.LogicalId()).(type) {
	case string:
		return v
	case *string:
		return *v
	default:
		panic(fmt.Sprintf("logical id resolved to %T", v))
	}
}
