package platform

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// validator is scripts/validate/validate-templates.mjs (make validate): the
// tools made for templates — the CloudFormation resource specification
// (@aws-cdk/aws-service-spec), asl-validator and
// amazon-states-language-service — plus the cycle, name-length and
// cross-stage collision checks.
const validator = "../../../scripts/validate/validate-templates.mjs"

type validation struct {
	OK       bool `json:"ok"`
	Findings []struct {
		Code    string `json:"code"`
		Where   string `json:"where"`
		Message string `json:"message"`
	} `json:"findings"`
	Counts struct {
		Resources     int `json:"resources"`
		Properties    int `json:"properties"`
		StateMachines int `json:"stateMachines"`
		Names         int `json:"names"`
	} `json:"counts"`
}

// validate writes the templates as evp-<stage>.template.json and runs the
// validator on them.
func validate(t *testing.T, templates map[string]map[string]any) validation {
	t.Helper()
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node runs the template validators")
	_, err = os.Stat("../../../node_modules/@aws-cdk/aws-service-spec/package.json")
	require.NoError(t, err, "the validators are pinned npm dev dependencies: run make deps")
	dir := t.TempDir()
	var files []string
	for stage, tpl := range templates {
		b, err := json.Marshal(tpl)
		require.NoError(t, err)
		f := filepath.Join(dir, "evp-"+stage+".template.json")
		require.NoError(t, os.WriteFile(f, b, 0o644))
		files = append(files, f)
	}
	out, err := exec.Command(node, append([]string{validator, "--json"}, files...)...).Output()
	var v validation
	require.NoError(t, json.Unmarshal(out, &v), "validator output: %s", out)
	if v.OK {
		require.NoError(t, err)
	} else {
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
		require.Equal(t, 1, exit.ExitCode(), "findings exit 1")
	}
	return v
}

// deepCopy is a template copy a fault may break.
func deepCopy(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

// The synthesized templates of both stages pass every check.
func TestTemplatesValidate(t *testing.T) {
	t.Parallel()
	v := validate(t, map[string]map[string]any{"prod": prod.raw, "dev": dev.raw})
	require.True(t, v.OK, "%+v", v.Findings)
	require.Equal(t, len(prod.tpl.Resources)+len(dev.tpl.Resources), v.Counts.Resources)
	require.Equal(t, 2, v.Counts.StateMachines)
	require.Greater(t, v.Counts.Properties, 1000)
	require.Greater(t, v.Counts.Names, 100)
}

// Each check fails on the fault it is for, injected into a copy of the dev
// template.
func TestValidatorCatchesInjectedFaults(t *testing.T) {
	t.Parallel()
	// find is the first resource of the type (that pick accepts), by id.
	find := func(tpl map[string]any, typ string, pick func(map[string]any) bool) (string, map[string]any) {
		t.Helper()
		for _, id := range sortedKeys(tpl["Resources"].(map[string]any)) {
			r := tpl["Resources"].(map[string]any)[id].(map[string]any)
			if r["Type"] == typ && (pick == nil || pick(r)) {
				return id, r
			}
		}
		require.Failf(t, "no resource", "of type %s", typ)
		return "", nil
	}
	res := func(tpl map[string]any, typ string, pick func(map[string]any) bool) map[string]any {
		_, r := find(tpl, typ, pick)
		return r
	}
	props := func(r map[string]any) map[string]any { return r["Properties"].(map[string]any) }
	// breakDefinition rewrites the replay state machine's definition text.
	breakDefinition := func(tpl map[string]any, from, to string) {
		sm := props(res(tpl, "AWS::StepFunctions::StateMachine", nil))
		parts := sm["DefinitionString"].(map[string]any)["Fn::Join"].([]any)[1].([]any)
		for i, p := range parts {
			if s, ok := p.(string); ok && strings.Contains(s, from) {
				parts[i] = strings.Replace(s, from, to, 1)
				return
			}
		}
		require.Failf(t, "definition", "no %q in the replay definition", from)
	}
	for name, tc := range map[string]struct {
		fault func(tpl map[string]any)
		code  string
	}{
		"resource type": {func(tpl map[string]any) { res(tpl, "AWS::SQS::Queue", nil)["Type"] = "AWS::SQS::Queues" }, "unknown_resource_type"},
		"property name": {func(tpl map[string]any) { props(res(tpl, "AWS::SQS::Queue", nil))["VisibilityTimeoutSeconds"] = 30 }, "unknown_property"},
		"nested property name": {func(tpl map[string]any) {
			props(res(tpl, "AWS::Lambda::Function", nil))["LoggingConfig"].(map[string]any)["LogFormatt"] = "JSON"
		}, "unknown_property"},
		"required property": {func(tpl map[string]any) { delete(props(res(tpl, "AWS::Lambda::Function", nil)), "Role") }, "missing_required_property"},
		"attribute name": {func(tpl map[string]any) {
			q, _ := find(tpl, "AWS::SQS::Queue", nil)
			tpl["Outputs"] = map[string]any{"Broken": map[string]any{"Value": map[string]any{"Fn::GetAtt": []any{q, "Url"}}}}
		}, "unknown_attribute"},
		"state type (asl-validator)": {func(tpl map[string]any) { breakDefinition(tpl, `"Type":"Choice"`, `"Type":"Choise"`) }, "invalid_state_machine"},
		"dangling Next (amazon-states-language-service)": {func(tpl map[string]any) {
			breakDefinition(tpl, `"Next":"Refused?"`, `"Next":"No such state"`)
		}, "invalid_state_machine_asls"},
		"dependency cycle": {func(tpl map[string]any) {
			// A topic queue's redrive policy points at its DLQ; make the DLQ
			// wait for the queue.
			q, queue := find(tpl, "AWS::SQS::Queue", func(r map[string]any) bool { return props(r)["RedrivePolicy"] != nil })
			dlq := refID(dig(props(queue), "RedrivePolicy", "deadLetterTargetArn"))
			tpl["Resources"].(map[string]any)[dlq].(map[string]any)["DependsOn"] = []any{q}
		}, "dependency_cycle"},
		"name length at a 16-character stage": {func(tpl map[string]any) {
			props(res(tpl, "AWS::Lambda::Function", nil))["FunctionName"] = "evp-dev-" + strings.Repeat("x", 50)
		}, "name_too_long"},
		"a name whose limit the validator does not know": {func(tpl map[string]any) {
			// A resource another change adds, named the platform's way, on a
			// type without a length rule: the rule must be added.
			tpl["Resources"].(map[string]any)["MailConfig"] = map[string]any{"Type": "AWS::SES::ConfigurationSet", "Properties": map[string]any{"Name": "evp-dev-mail"}}
		}, "name_limit_unknown"},
		"reference to nothing": {func(tpl map[string]any) {
			props(res(tpl, "AWS::SQS::QueuePolicy", nil))["Queues"] = []any{map[string]any{"Ref": "NoSuchQueue"}}
		}, "unknown_reference"},
		"names two stages share": {func(tpl map[string]any) {
			// Stage dev's "evp-dev-jobs-sweep" would be stage dev-jobs's
			// "sweep" rule: the collision the outbox sweep rule had.
			props(res(tpl, "AWS::Events::Rule", func(r map[string]any) bool { return strings.HasSuffix(str(props(r)["Name"]), "-outbox-sweep") }))["Name"] = "evp-dev-sweep"
		}, "name_collision"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tpl := deepCopy(t, dev.raw)
			tc.fault(tpl)
			v := validate(t, map[string]map[string]any{"dev": tpl})
			require.False(t, v.OK)
			var codes []string
			for _, f := range v.Findings {
				codes = append(codes, f.Code)
			}
			require.Contains(t, codes, tc.code, "%+v", v.Findings)
		})
	}
}

// A Ref to one of the template's parameters is a reference, not a dangling
// one (the fault test above shows a dangling Ref is a finding).
func TestValidatorAcceptsParameterReferences(t *testing.T) {
	t.Parallel()
	tpl := deepCopy(t, dev.raw)
	require.Contains(t, tpl["Parameters"], "BootstrapVersion")
	for _, id := range sortedKeys(tpl["Resources"].(map[string]any)) {
		r := tpl["Resources"].(map[string]any)[id].(map[string]any)
		if r["Type"] == "AWS::Lambda::Function" {
			r["Properties"].(map[string]any)["Description"] = map[string]any{"Ref": "BootstrapVersion"}
			break
		}
	}
	v := validate(t, map[string]map[string]any{"dev": tpl})
	require.True(t, v.OK, "%+v", v.Findings)
}
