package iamcheck

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/siteswarm/eventplatform/internal/observe/iamcalls"
)

// environmentCalls are the reads a function's environment stands for on
// the stage (§3 of the deployed-truth issue): every secret ARN it names
// is read with secretsmanager:GetSecretValue, every SSM path under the
// stage's parameter prefix with ssm:GetParametersByPath, every parameter
// name with ssm:GetParameter. Locally the stack passes secrets as
// settings, so no run records these; the check asks the evaluator for
// them as the deployed function will make them. A secret or parameter
// the template does not create is a problem: the function would fail at
// cold start on the stage.
func (r resolver) environmentCalls(principals map[string]*principal) ([]iamcalls.Call, []string) {
	secrets := map[string]bool{}
	for _, id := range r.tpl.ofType("AWS::SecretsManager::Secret") {
		if arn, err := r.ref(id); err == nil {
			secrets[arn] = true
		}
	}
	var params []string
	for _, id := range r.tpl.ofType("AWS::SSM::Parameter") {
		if name, err := r.name(id); err == nil {
			params = append(params, name)
		}
	}
	var calls []iamcalls.Call
	var problems []string
	call := func(p *principal, op, action, resource string) {
		calls = append(calls, iamcalls.Call{Function: p.Name, Via: ViaEnvironment, Operation: op, Count: 1,
			Request: iamcalls.Request{Action: action, Resource: resource}})
	}
	for _, name := range slices.Sorted(maps.Keys(principals)) {
		p := principals[name]
		for _, k := range slices.Sorted(maps.Keys(p.Env)) {
			v := p.Env[k]
			switch {
			case strings.Contains(v, ":secretsmanager:") && strings.Contains(v, ":secret:"):
				if !secrets[v] {
					problems = append(problems, fmt.Sprintf("%s: %s names secret %s, which the template does not create", p.Physical, k, v))
				}
				call(p, "SecretsManager.GetSecretValue", "secretsmanager:GetSecretValue", v)
			case strings.HasSuffix(k, "_SECRET_ARN"):
				problems = append(problems, fmt.Sprintf("%s: %s is %q, not a secret's ARN", p.Physical, k, v))
			case strings.HasPrefix(v, r.stage.ParamPrefix+"/"):
				switch {
				case slices.Contains(params, v):
					call(p, "SSM.GetParameter", "ssm:GetParameter", r.arn("ssm", "parameter"+v))
				case slices.ContainsFunc(params, func(n string) bool { return strings.HasPrefix(n, v+"/") }):
					call(p, "SSM.GetParametersByPath", "ssm:GetParametersByPath", r.arn("ssm", "parameter"+v))
				default:
					problems = append(problems, fmt.Sprintf("%s: %s names %s, under which the template creates no parameter", p.Physical, k, v))
				}
			}
		}
	}
	return calls, problems
}
