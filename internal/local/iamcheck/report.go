package iamcheck

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Report writes the check's report in Markdown: the counts, the denied
// calls, per function its calls and the grants no call used, and the
// coverage (functions no run recorded, calls of functions the stage does
// not deploy).
func (r Result) Report(w io.Writer, template string) error {
	p := &printer{w: w}
	total, distinct := 0, 0
	for _, c := range r.Calls {
		if c.Via == ViaEnvironment {
			continue
		}
		total += c.Count
		distinct++
	}
	sources := make([]string, 0, len(r.Sources))
	for _, s := range slices.Sorted(maps.Keys(r.Sources)) {
		sources = append(sources, fmt.Sprintf("%s %d", s, r.Sources[s]))
	}
	p.f("Stage `%s` (`%s`), account %s, region %s: %d recordings (%s).\n\n", r.Stage.Prefix, template, r.Stage.Account, r.Stage.Region, r.Recordings, strings.Join(sources, ", "))
	unused, service := 0, 0
	for _, f := range r.Functions {
		for _, g := range f.Unused {
			if g.Service != "" {
				service++
			} else {
				unused++
			}
		}
	}
	p.f("| calls recorded | distinct requests | environment reads | denied | failures | unused grants | functions without a recorded call |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	env := 0
	for _, c := range r.Calls {
		if c.Via == ViaEnvironment {
			env++
		}
	}
	silent := 0
	for _, f := range r.Functions {
		if f.Calls == 0 {
			silent++
		}
	}
	p.f("| %d | %d | %d | %d | %d | %d | %d |\n\n", total, distinct, env, len(r.Denied()), len(r.Failures), unused, silent)

	if len(r.Failures) > 0 {
		p.f("### Failures\n\n")
		for _, f := range r.Failures {
			p.f("- %s\n", f)
		}
		p.f("\n")
	}

	p.f("### Per function\n\n")
	p.f("Calls by how they were made: the handler's code, Lambda's event source mapping (with the function's role), the cold start, and the reads its environment stands for on the stage (secrets, SSM maps).\n\n")
	p.f("| function | role | calls | distinct | handler | event source | cold start | environment | operations | grants | unused |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, f := range r.Functions {
		n := 0
		for _, g := range f.Unused {
			if g.Service == "" {
				n++
			}
		}
		p.f("| %s | %s | %d | %d | %d | %d | %d | %d | %d | %d | %d |\n", f.Name, f.Role, f.Calls-f.ByVia[ViaEnvironment], f.Distinct,
			f.ByVia["handler"], f.ByVia["event source mapping"], f.ByVia["cold start"], f.ByVia[ViaEnvironment], len(f.Operations), f.Grants, n)
	}
	p.f("\n")

	p.f("### Grants no recorded call used\n\n")
	p.f("Per function, each statement's action on each resource that no allowed call matched: %d, besides %d that serve AWS services' own calls with the role (Lambda's logs and X-Ray, the event source mapping's queue calls, SNS's use of the alert topic's key, Step Functions' log delivery). "+
		"An action the function's recorded calls never made is in bold: a call path no run takes, or a grant nobody needs; the others are actions it made on another resource of the same kind (another topic's queue, another consumer's mapping).\n\n", unused, service)
	for _, f := range r.Functions {
		var lines []string
		for _, g := range f.Unused {
			if g.Service != "" {
				continue
			}
			cond := ""
			if g.Conditional {
				cond = " (with a condition)"
			}
			action := "`" + g.Action + "`"
			if !g.Sibling {
				action = "**" + action + "**"
			}
			lines = append(lines, fmt.Sprintf("- %s on `%s`%s — %s statement %d", action, g.Resource, cond, g.Policy, g.Statement))
		}
		if len(lines) == 0 {
			continue
		}
		p.f("**%s**\n\n%s\n\n", f.Name, strings.Join(lines, "\n"))
	}

	p.f("### Coverage\n\n")
	var none []string
	for _, f := range r.Functions {
		if f.Calls-f.ByVia[ViaEnvironment] == 0 {
			none = append(none, f.Name)
		}
	}
	if len(none) > 0 {
		p.f("- Deployed on this stage, no call recorded by any run: %s.\n", strings.Join(none, ", "))
	} else {
		p.f("- Every function the stage deploys made calls in the runs.\n")
	}
	if len(r.NotDeployed) > 0 {
		var nd []string
		for _, k := range slices.Sorted(maps.Keys(r.NotDeployed)) {
			nd = append(nd, fmt.Sprintf("%s (%d calls)", k, r.NotDeployed[k]))
		}
		p.f("- Recorded locally, not deployed on this stage (not judged here): %s.\n", strings.Join(nd, ", "))
	}
	if len(r.NotOnStage) > 0 {
		p.f("- Recorded locally on resources this stage does not create (not judged here):\n")
		for _, k := range slices.Sorted(maps.Keys(r.NotOnStage)) {
			p.f("  - %s (%d calls)\n", k, r.NotOnStage[k])
		}
	}
	if r.Sampled > 0 {
		p.f("- %d object requests past the first %d distinct keys per function, action and top-level prefix were counted, not evaluated (the stage's object grants are by prefix).\n", r.Sampled, 20)
	}
	p.f("\n")
	return p.err
}

// Details writes every distinct request with its decision (the check's
// full output, .cache/iam-check-<stage>.txt).
func (r Result) Details(w io.Writer) error {
	p := &printer{w: w}
	for _, c := range r.Calls {
		via := c.Via
		if via == "" {
			via = "handler"
		}
		p.f("%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", c.Decision, c.Function, via, c.Action, c.Resolved, c.Count, c.Operation, strings.Join(c.Sources, ","))
	}
	return p.err
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}
