package devstack

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/adminfn"
	"github.com/siteswarm/eventplatform/internal/wire/catalog"
	"github.com/siteswarm/eventplatform/internal/wire/ingestfn"
	"github.com/siteswarm/eventplatform/internal/wire/jobsfn"
	"github.com/siteswarm/eventplatform/internal/wire/subscriberhealthfn"
)

func init() { register("functions", catalogFunctions) }

// local is what the local stack adds to a function's descriptor: the
// variables it decides beyond its resources (local defaults, an alert
// topic it creates, settings kept in the local SSM), whether the function
// runs here at all, and a timeout of its own. Everything else — the
// wiring, the triggers, the schedules and their inputs — is the
// descriptor's, as deployed.
type local struct {
	env     func(ctx context.Context, s *Stack) (map[string]string, error)
	runs    func(s *Stack) bool
	timeout func(conf any) time.Duration
	// setup mounts what the function reaches on the stack (the local
	// Stripe API).
	setup func(s *Stack) error
}

// locals are the functions that need more than their resources; adding a
// function needs no line here (catalog.All is the list).
var locals = map[string]local{}

// catalogFunctions runs every function of the catalog (consumers aside:
// fn_consumers.go, fn_cachepurge.go) from its descriptor: its environment is
// the stack's resources it reads and the entries of locals over the
// stack's settings; its handler is built by the same wiring its binary
// runs, with the stack's clients; its triggers are its descriptor's.
func catalogFunctions(ctx context.Context, s *Stack) ([]Function, error) {
	var out []Function
	for _, fn := range catalog.All() {
		l := locals[fn.Name]
		if l.runs != nil && !l.runs(s) {
			continue
		}
		// The environment is the stack's (the CDK app's on a stage): what
		// it provisions for it (the alert topic, its inbox) is no call of
		// the function's, so it is not attributed to it.
		res, err := s.environment(ctx, fn)
		if err != nil {
			return nil, err
		}
		conf, err := fn.Wiring.Load(s.env(res), s.Topology)
		if err != nil {
			return nil, fmt.Errorf("%s config: %w", fn.Name, err)
		}
		h, err := fn.Wiring.Build(coldStart(ctx, fn.Local()), conf, s.clientSource(), s.runtime(fn.Local()))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fn.Name, err)
		}
		if l.setup != nil {
			if err := l.setup(s); err != nil {
				return nil, fmt.Errorf("%s: %w", fn.Name, err)
			}
		}
		triggers, err := s.triggersOf(fn)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fn.Name, err)
		}
		timeout := fn.Timeout
		if l.timeout != nil {
			timeout = l.timeout(conf)
		}
		out = append(out, Function{Name: fn.Local(), Handler: h, Timeout: timeout, Triggers: triggers})
	}
	return out, nil
}

// Environment is what the stack sets for a function of the catalog (by
// its name): the resources it reads and the stack's own settings for it
// (locals), which the stack's settings layer under (Stack.Settings).
func (s *Stack) Environment(ctx context.Context, name string) (map[string]string, error) {
	fn, ok := catalog.Of(name)
	if !ok {
		return nil, fmt.Errorf("devstack: no function %q in the catalog", name)
	}
	return s.environment(ctx, fn)
}

func (s *Stack) environment(ctx context.Context, fn wire.Function) (map[string]string, error) {
	res := s.resources(fn)
	if l := locals[fn.Name]; l.env != nil {
		extra, err := l.env(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fn.Name, err)
		}
		maps.Copy(res, extra)
	}
	return res, nil
}

// resources are the stack's resources a function reads
// (wire.Function.Environment), named as the CDK app names them.
func (s *Stack) resources(fn wire.Function) map[string]string {
	r := s.Resources
	dlqURLs, dlqARNs := map[string]string{}, map[string]string{}
	for topic, q := range r.Queues {
		dlqURLs[topic], dlqARNs[topic] = q.DLQURL, q.DLQARN
	}
	all := map[string]string{
		wire.EnvEventsTable:    r.EventsTable,
		wire.EnvIncidentsTable: r.IncidentsTable,
		wire.EnvPurgeTable:     r.PurgeTable,
		wire.EnvBucket:         r.Bucket,
		wire.EnvQueueURLs:      jsonOf(r.QueueURLs()),
		wire.EnvDLQURLs:        jsonOf(dlqURLs),
		wire.EnvDLQARNs:        jsonOf(dlqARNs),
		wire.EnvStage:          r.Prefix,
		wire.EnvIngestFunction: ingestfn.Name,
		wire.EnvHealthFunction: subscriberhealthfn.Name,
		wire.EnvJobsTable:      r.JobsTable,
		jobsfn.EnvJobsQueueURL: r.JobsQueue.URL,
		adminfn.EnvAdminTable:  r.AdminTable,
	}
	out := map[string]string{}
	for _, name := range fn.Environment(s.Topology) {
		if v, ok := all[name]; ok {
			out[name] = v
		}
	}
	return out
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// clientSource hands a function the stack's clients (wire.ClientSource).
func (s *Stack) clientSource() wire.ClientSource {
	return wire.ClientSource{Fill: s.Clients.Fill}
}

// triggersOf are a function's triggers from its descriptor: its routes on
// the stack's listener, its event source mappings on the provisioned
// queues, its schedules (Schedules).
func (s *Stack) triggersOf(fn wire.Function) ([]lambdalocal.Trigger, error) {
	var out []lambdalocal.Trigger
	for _, r := range fn.Routes {
		out = append(out, lambdalocal.HTTPRoute{Method: r.Method, Path: r.Path})
	}
	for _, src := range fn.Queues {
		qs, err := s.queueSources(src)
		if err != nil {
			return nil, err
		}
		out = append(out, qs...)
	}
	schedules, err := Schedules(s.Settings, []wire.Function{fn})
	if err != nil {
		return nil, err
	}
	for _, sch := range schedules {
		out = append(out, sch.trigger())
	}
	return out, nil
}

// queueSources resolves an event source mapping's queue to the provisioned
// ones, with the descriptor's batch settings.
func (s *Stack) queueSources(src wire.QueueSource) ([]lambdalocal.Trigger, error) {
	r := s.Resources
	source := func(url, arn string) lambdalocal.QueueSource {
		return lambdalocal.QueueSource{QueueURL: url, QueueARN: arn, BatchSize: src.BatchSize, BatchWindow: src.BatchWindow, MaxConcurrency: src.MaxConcurrency}
	}
	switch src.Queue {
	case wire.QueueJobs:
		return []lambdalocal.Trigger{source(r.JobsQueue.URL, r.JobsQueue.ARN)}, nil
	case wire.QueueImports:
		return []lambdalocal.Trigger{source(r.ImportsQueue.URL, r.ImportsQueue.ARN)}, nil
	case wire.QueueTopic:
		q, ok := r.Queues[src.Topic]
		if !ok {
			return nil, fmt.Errorf("no queue of topic %q", src.Topic)
		}
		return []lambdalocal.Trigger{source(q.URL, q.ARN)}, nil
	case wire.QueueTopicDLQs:
		var out []lambdalocal.Trigger
		for _, name := range s.Topology.TopicNames() {
			q := r.Queues[name]
			out = append(out, source(q.DLQURL, q.DLQARN))
		}
		return out, nil
	}
	return nil, fmt.Errorf("event source on an unknown queue %q", src.Queue)
}

// Schedule is one row of the local stack's schedule table: a descriptor's
// EventBridge rule as the stack fires it — the same target and input, at
// the same daily time, or at the same rate unless the rate's local setting
// shortens it (Every).
type Schedule struct {
	// Function is the target (the deployed evp-<stage>-<Function>); Local
	// its name here.
	Function, Local string
	// Rule is the rule's name under the stage prefix; Expression the
	// deployed schedule expression.
	Rule, Expression string
	// Input is what the target receives (nil: EventBridge's scheduled
	// event).
	Input json.RawMessage
	// Every is the local period of a rate schedule; Next gives a daily
	// one's runs.
	Every time.Duration
	Next  func(time.Time) time.Time
}

func (sch Schedule) trigger() lambdalocal.Schedule {
	return lambdalocal.Schedule{Rule: sch.Rule, Every: sch.Every, Next: sch.Next, Input: sch.Input}
}

// minLocalEvery is the shortest local period a setting may ask for.
const minLocalEvery = 100 * time.Millisecond

// Schedules is the local stack's schedule table for fns (the catalog's:
// Stack.Schedules) under settings: every rule of their descriptors, with
// its input.
func Schedules(settings *envconf.Reader, fns []wire.Function) ([]Schedule, error) {
	var out []Schedule
	for _, fn := range fns {
		for _, d := range fn.Schedules {
			sch := Schedule{Function: fn.Name, Local: fn.Local(), Rule: d.Rule, Expression: d.Expression(), Every: d.Every}
			if d.Input != nil {
				b, err := json.Marshal(d.Input)
				if err != nil {
					return nil, fmt.Errorf("%s: rule %s: input: %w", fn.Name, d.Rule, err)
				}
				sch.Input = b
			}
			switch {
			case d.Daily != nil:
				sch.Every, sch.Next = 0, d.Next
			case d.Local != nil:
				sch.Every = settings.Duration(d.Local.Setting, d.Local.Default)
				if err := settings.Err(); err != nil {
					return nil, err
				}
				if sch.Every < minLocalEvery {
					return nil, fmt.Errorf("%s=%s: must be at least %s", d.Local.Setting, sch.Every, minLocalEvery)
				}
			}
			out = append(out, sch)
		}
	}
	return out, nil
}

// Schedules is the stack's schedule table: what it fires, when, with which
// input (the deployed template's rules, make boot-check compares them).
func (s *Stack) Schedules() ([]Schedule, error) {
	return Schedules(s.Settings, slices.DeleteFunc(catalog.All(), func(fn wire.Function) bool {
		l := locals[fn.Name]
		return l.runs != nil && !l.runs(s)
	}))
}

// hasTopicOf reports whether the topology has a topic consumed by kind.
func hasTopicOf(top topology.Topology, kind topology.ConsumerKind) bool {
	return slices.ContainsFunc(top.Topics, func(tp topology.Topic) bool { return tp.Consumer == kind })
}
