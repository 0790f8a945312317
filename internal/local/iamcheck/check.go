package iamcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"

	"github.com/siteswarm/eventplatform/internal/observe/iamcalls"
)

// Config configures Check.
type Config struct {
	// Template is the stage's synthesized template
	// (cdk.out/<stage>/evp-<stage>.template.json).
	Template string
	// Recordings is the directory of the local runs' recordings
	// (iamcalls.EnvRecord).
	Recordings string
	// Simulator is scripts/iam-check/simulate.mjs; Node runs it (default
	// "node").
	Simulator string
	Node      string
}

// WithDefaults fills Node.
func (c Config) WithDefaults() Config {
	if c.Node == "" {
		c.Node = "node"
	}
	return c
}

// Validate requires the template, the recordings and the simulator.
func (c Config) Validate() error {
	var errs []error
	if c.Template == "" {
		errs = append(errs, errors.New("iamcheck: no template (make synth first)"))
	}
	if c.Recordings == "" {
		errs = append(errs, errors.New("iamcheck: no recordings directory"))
	}
	if c.Simulator == "" {
		errs = append(errs, errors.New("iamcheck: no simulator script"))
	}
	return errors.Join(errs...)
}

// Via of the requests the check adds for what a function's environment
// names (§3: the deployed function reads them; locally the stack passes
// secrets as settings).
const ViaEnvironment = "environment"

// Call is one distinct request the runs made (merged over recordings),
// and its decision.
type Call struct {
	iamcalls.Call
	// Resolved is the request's resource on the stage.
	Resolved string `json:"resolved"`
	Decision string `json:"decision"`
	Sources  []string
	// Missing is the statement that would allow a denied call; DeniedBy
	// the statement that denies it explicitly.
	Missing  string `json:"missing,omitempty"`
	DeniedBy string `json:"deniedBy,omitempty"`
	Error    string `json:"error,omitempty"`
	Role     string `json:"role,omitempty"`
	Policy   string `json:"policy,omitempty"`
}

// Grant is one action on one resource pattern of a role's statement.
type Grant struct {
	Policy      string
	Statement   int
	Action      string
	Resource    string
	Conditional bool
	// Service names whom the grant serves when it is not the function's
	// code ("" when it is): Lambda's log group and X-Ray segments, the
	// event source mapping's own queue calls, SNS's use of the alert
	// topic's KMS key, Step Functions' log delivery. No SDK call of the
	// function makes those, so they are listed apart, not as unused.
	Service string
	// Sibling: the function's recorded calls use the action on another
	// resource of the same kind (one call path, another topic's queue or
	// consumer's mapping); otherwise no recorded call used the action at
	// all.
	Sibling bool
}

// Function is what the check found for one caller of the template.
type Function struct {
	Name, Physical, Role string
	// Calls is how many calls the runs recorded, Distinct how many
	// distinct requests, ByVia per how they were made.
	Calls, Distinct int
	ByVia           map[string]int
	// Operations are the SDK operations the runs recorded.
	Operations []string
	Grants     int
	Unused     []Grant
}

// Result is a check's outcome.
type Result struct {
	Stage      Stage
	Recordings int
	Sources    map[string]int // recordings per run (test binary)
	Calls      []Call         // every distinct request, sorted
	Functions  []Function
	// Failures fail the check: denied calls, calls without an IAM rule,
	// unresolvable names, names of another stage.
	Failures []string
	// NotDeployed are calls of functions the stage does not deploy (a
	// consumer without a subscriber on this stage), by function;
	// NotOnStage calls on resources it does not create (the mapping of
	// such a consumer, a stage map it does not keep), by function and
	// resource. Neither is judged on this stage.
	NotDeployed map[string]int
	NotOnStage  map[string]int
	// Sampled is the object requests left out past iamcalls.MaxObjectKeys.
	Sampled int
}

// Denied are the denied calls.
func (r Result) Denied() []Call {
	var out []Call
	for _, c := range r.Calls {
		if c.Decision != "Allowed" {
			out = append(out, c)
		}
	}
	return out
}

// Check evaluates every recorded call against the template.
func Check(ctx context.Context, c Config) (Result, error) {
	c = c.WithDefaults()
	if err := c.Validate(); err != nil {
		return Result{}, err
	}
	tpl, stage, err := LoadTemplate(c.Template)
	if err != nil {
		return Result{}, err
	}
	recs, err := iamcalls.ReadDir(c.Recordings)
	if err != nil {
		return Result{}, err
	}
	if len(recs) == 0 {
		return Result{}, fmt.Errorf("iamcheck: no recordings in %s (make test writes them; make iam-check runs the recording tests without them)", c.Recordings)
	}
	return evaluate(ctx, c, tpl, stage, recs)
}

func evaluate(ctx context.Context, c Config, tpl *Template, stage Stage, recs []iamcalls.Recording) (Result, error) {
	r := resolver{tpl: tpl, stage: stage}
	res := Result{Stage: stage, Recordings: len(recs), Sources: map[string]int{}, NotDeployed: map[string]int{}, NotOnStage: map[string]int{}}
	inv := r.inventory()
	principals, problems, err := r.principals()
	if err != nil {
		return res, err
	}
	res.Failures = append(res.Failures, problems...)
	resPolicies, err := r.resourcePolicies()
	if err != nil {
		return res, err
	}
	bucket, err := r.archiveBucket()
	if err != nil {
		return res, err
	}

	// Merge the recordings.
	type key struct{ fn, via, op, action, resource, ctx string }
	merged := map[key]*Call{}
	for _, rec := range recs {
		res.Sources[rec.Source]++
		res.Sampled += rec.Sampled
		for k, n := range rec.Unmapped {
			res.Failures = append(res.Failures, fmt.Sprintf("%s (%d calls): no IAM rule for this operation in internal/observe/iamcalls (Expand): add one", k, n))
		}
		for _, call := range rec.Calls {
			k := key{call.Function, call.Via, call.Operation, call.Action, call.Resource, fmt.Sprint(call.Context)}
			if m, ok := merged[k]; ok {
				m.Count += call.Count
				if !slices.Contains(m.Sources, rec.Source) {
					m.Sources = append(m.Sources, rec.Source)
				}
				continue
			}
			merged[k] = &Call{Call: call, Sources: []string{rec.Source}}
		}
	}
	// What each function's environment names of the stage's secrets and
	// parameters (§3).
	envCalls, envProblems := r.environmentCalls(principals)
	res.Failures = append(res.Failures, envProblems...)
	for _, call := range envCalls {
		merged[key{call.Function, call.Via, call.Operation, call.Action, call.Resource, ""}] = &Call{Call: call, Sources: []string{"template"}}
	}

	// One simulation request per distinct call.
	in := simInput{Principals: map[string][]namedPolicy{}, ResourcePolicies: map[string]policy{}, Requests: []simRequest{}}
	var calls []*Call
	for _, k := range slices.SortedFunc(maps.Keys(merged), func(a, b key) int {
		return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
	}) {
		call := merged[k]
		p, ok := principals[call.Function]
		if !ok {
			res.NotDeployed[call.Function] += call.Count
			continue
		}
		call.Role = p.Role
		call.Resolved = r.placeholders(call.Resource, bucket)
		if strings.Contains(call.Resolved, "${") {
			res.Failures = append(res.Failures, fmt.Sprintf("%s: %s on %s: the resource is not one of the stage's", call.Function, call.Action, call.Resolved))
			continue
		}
		watched, monitor := monitors(p)
		if !inv.has(call.Resolved) || monitor && strings.HasPrefix(call.Action, "sqs:") && !watched[call.Resolved] {
			res.NotOnStage[call.Function+" "+call.Action+" "+call.Resolved] += call.Count
			continue
		}
		in.Principals[p.RoleARN] = p.Policies
		rk := resourceKey(call.Resolved)
		if _, ok := resPolicies[rk]; !ok {
			rk = ""
		} else {
			in.ResourcePolicies[rk] = resPolicies[rk]
		}
		context := map[string]string{"aws:SecureTransport": "true", "aws:PrincipalArn": p.RoleARN, "aws:PrincipalAccount": stage.Account}
		if strings.HasPrefix(call.Action, "s3:") {
			context["s3:TlsVersion"] = "1.3" // the SDK's; the bucket policy denies below 1.2
		}
		maps.Copy(context, call.Context)
		in.Requests = append(in.Requests, simRequest{ID: len(calls), Principal: p.RoleARN, Action: call.Action, Resource: call.Resolved,
			Account: stage.Account, ResourcePolicy: rk, Context: context})
		calls = append(calls, call)
	}
	out, err := simulate(ctx, c, in)
	if err != nil {
		return res, err
	}
	used := map[string]bool{} // policy|statement|action|resource
	for _, o := range out.Results {
		call := calls[o.ID]
		call.Decision = o.Decision
		switch o.Decision {
		case "Allowed":
			for _, u := range o.Allow {
				for _, a := range u.Actions {
					for _, rs := range u.Resources {
						used[fmt.Sprintf("%s|%d|%s|%s", u.Policy, u.Statement, a, rs)] = true
					}
				}
			}
		case "Error":
			call.Error = o.Errors
			res.Failures = append(res.Failures, fmt.Sprintf("%s: %s on %s: the evaluator refused the request: %s", call.Function, call.Action, call.Resolved, o.Errors))
		default:
			call.Missing = missing(call)
			if len(o.Deny) > 0 {
				call.DeniedBy = fmt.Sprintf("%s statement %d", o.Deny[0].Policy, o.Deny[0].Statement)
			}
			if pols := principals[call.Function].Policies; len(pols) > 0 {
				call.Policy = pols[len(pols)-1].Name
			}
		}
		res.Calls = append(res.Calls, *call)
	}
	for _, d := range res.Denied() {
		if d.Error != "" {
			continue
		}
		msg := fmt.Sprintf("DENIED %s (role %s): %s on %s (%s, %d calls)", d.Function, d.Role, d.Action, d.Resolved, d.Operation, d.Count)
		if d.DeniedBy != "" {
			msg += "; explicitly denied by " + d.DeniedBy
		} else {
			msg += "; missing statement in " + d.Policy + ": " + d.Missing
		}
		res.Failures = append(res.Failures, msg)
	}
	res.Functions = functions(principals, res.Calls, used)
	return res, nil
}

// missing is the statement that would allow a denied call.
func missing(c *Call) string {
	st := map[string]any{"Effect": "Allow", "Action": c.Action, "Resource": c.Resolved}
	if p, ok := c.Context["s3:prefix"]; ok {
		st["Condition"] = map[string]any{"StringLike": map[string]any{"s3:prefix": p + "*"}}
	}
	b, _ := json.Marshal(st)
	return string(b)
}

// service is whom a grant serves when no SDK call of the function does
// ("" for the function's own calls): see Grant.Service.
func service(g Grant, mapped map[string]bool) string {
	service, _, _ := strings.Cut(g.Action, ":")
	switch {
	case service == "logs" || service == "xray":
		return "Lambda and Step Functions (logs, X-Ray)"
	case service == "kms":
		return "SNS (the alert topic's KMS key, used with the publisher's permissions)"
	case service == "sqs" && mapped[g.Resource] && g.Action != "sqs:SendMessage":
		return "Lambda's event source mapping (CDK's consume grant on its queue)"
	}
	return ""
}

// functions summarizes each caller of the template: its calls and the
// grants no call used.
func functions(principals map[string]*principal, calls []Call, used map[string]bool) []Function {
	var out []Function
	for _, name := range slices.Sorted(maps.Keys(principals)) {
		p := principals[name]
		f := Function{Name: name, Physical: p.Physical, Role: p.Role, ByVia: map[string]int{}}
		ops, actions := map[string]bool{}, map[string]bool{}
		for _, c := range calls {
			if c.Function != name {
				continue
			}
			if c.Decision == "Allowed" {
				actions[c.Action] = true
			}
			f.Distinct++
			f.Calls += c.Count
			via := c.Via
			if via == "" {
				via = "handler"
			}
			f.ByVia[via] += c.Count
			if c.Via != ViaEnvironment {
				ops[c.Operation] = true
			}
		}
		f.Operations = slices.Sorted(maps.Keys(ops))
		for _, pol := range p.Policies {
			for _, g := range grants(pol) {
				f.Grants++
				if used[fmt.Sprintf("%s|%d|%s|%s", g.Policy, g.Statement, g.Action, g.Resource)] {
					continue
				}
				g.Service = service(g, p.Mapped)
				g.Sibling = actions[g.Action]
				f.Unused = append(f.Unused, g)
			}
		}
		out = append(out, f)
	}
	return out
}

// archiveBucket is the physical name of the stage's bucket (the one the
// local stack's single bucket stands for).
func (r resolver) archiveBucket() (string, error) {
	ids := r.tpl.ofType("AWS::S3::Bucket")
	for _, id := range ids {
		if strings.HasPrefix(id, "ArchiveBucket") {
			return r.name(id)
		}
	}
	if len(ids) == 1 {
		return r.name(ids[0])
	}
	return "", fmt.Errorf("iamcheck: no archive bucket among %v", ids)
}

type simInput struct {
	Principals       map[string][]namedPolicy `json:"principals"`
	ResourcePolicies map[string]policy        `json:"resourcePolicies"`
	Requests         []simRequest             `json:"requests"`
}

type simRequest struct {
	ID             int               `json:"id"`
	Principal      string            `json:"principal"`
	Action         string            `json:"action"`
	Resource       string            `json:"resource"`
	Account        string            `json:"account"`
	ResourcePolicy string            `json:"resourcePolicy,omitempty"`
	Context        map[string]string `json:"context"`
}

type simOutput struct {
	Results []struct {
		ID       int         `json:"id"`
		Decision string      `json:"decision"`
		Errors   string      `json:"errors"`
		Allow    []usedGrant `json:"allow"`
		Deny     []usedGrant `json:"deny"`
	} `json:"results"`
}

type usedGrant struct {
	Policy    string   `json:"policy"`
	Statement int      `json:"statement"`
	Actions   []string `json:"actions"`
	Resources []string `json:"resources"`
}

// simulate runs the evaluator over the requests.
func simulate(ctx context.Context, c Config, in simInput) (simOutput, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return simOutput{}, err
	}
	cmd := exec.CommandContext(ctx, c.Node, c.Simulator)
	cmd.Stdin = bytes.NewReader(body)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return simOutput{}, fmt.Errorf("iamcheck: %s %s: %w: %s", c.Node, c.Simulator, err, stderr.String())
	}
	var out simOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return simOutput{}, fmt.Errorf("iamcheck: the simulator's answer: %w", err)
	}
	if len(out.Results) != len(in.Requests) {
		return simOutput{}, fmt.Errorf("iamcheck: %d answers to %d requests", len(out.Results), len(in.Requests))
	}
	return out, nil
}
