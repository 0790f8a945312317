package wire

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// Function describes one Lambda function to everything but its own main:
// the CDK app deploys it from this (construct id, name, binary,
// description, memory, timeout, routes, event source mappings, schedules;
// it refuses to set a variable the function does not read), the local
// stack runs it (the same wiring, triggers and schedule inputs), the boot
// check boots it and fires its schedules, and functions/deps_test.go holds
// its binary to Services. Each function's wiring package declares its
// Function next to its Load and New (ingestfn.Function);
// internal/wire/catalog lists them. Only plain data and functions the
// binary links anyway live here, so a binary links its own descriptor and
// no other.
type Function struct {
	// Name is the function's name: deployed evp-<stage>-<Name>, and the
	// name the local stack's Lambda Invoke API answers to (LocalName, when
	// set, says otherwise there).
	Name string
	// LocalName is its name in the local stack when it differs from Name
	// (a topic's consumer: "consumer-http-billing-events" locally,
	// evp-<stage>-consumer-billing-events deployed).
	LocalName string
	// Binary is its main package, functions/<Binary>, built to
	// bin/<Binary>/bootstrap (the CDK app's role).
	Binary string
	// ID is its construct id in the CDK app ("Ingest"); its resources'
	// logical ids derive from it, so it never changes.
	ID string
	// Provider is the webhook provider whose deliveries it verifies
	// (webhook/providers; webhookfn.For), "" for the platform's other
	// functions: the CDK app gives it the provider's tenant settings and
	// the right to invoke ingest.
	Provider    string
	Description string
	MemoryMB    int
	Timeout     time.Duration
	// Services are the AWS services the binary calls, and so links.
	Services []string
	// Routes are its API Gateway routes (HTTP API, payload format 2.0).
	Routes []Route
	// Queues are its SQS event source mappings.
	Queues []QueueSource
	// Schedules are the EventBridge rules that invoke it.
	Schedules []Schedule
	// Secrets are the Secrets Manager secrets it reads: the CDK app creates
	// each (a placeholder an operator replaces after the first deploy),
	// names it in the function's EnvARN and lets the function read it and
	// nothing else.
	Secrets []Secret
	// AfterAnswer: its invocations hand work to after their answer
	// (afterward.Go: ingest's enqueued marks), so its main registers the
	// afterward extension that holds the environment until that work is
	// done (Boot.Start).
	AfterAnswer bool
	// Wiring builds it: the same Load and New the binary runs.
	Wiring Wiring
}

// Local is the function's name in the local stack.
func (f Function) Local() string {
	if f.LocalName != "" {
		return f.LocalName
	}
	return f.Name
}

// Environment is what the function reads from its environment: every
// variable its Load looks up (recorded from the code, so it cannot drift),
// and STAGE_NAME, which every function's runtime reads. The CDK app sets
// no other variable on it. A Load that reads some variables only when
// others are set (replay's jobs part, once JOBS_TABLE is) is run again
// with every variable it read set, until it reads nothing new.
func (f Function) Environment(top topology.Topology) []string {
	seen := map[string]bool{EnvStage: true}
	if f.Wiring.Load == nil {
		return []string{EnvStage}
	}
	for pass := 0; pass < 5; pass++ {
		set := maps.Clone(seen)
		grew := false
		r := &envconf.Reader{Lookup: func(k string) (string, bool) {
			if !seen[k] {
				seen[k], grew = true, true
			}
			return "x", set[k]
		}}
		_, _ = f.Wiring.Load(r, top)
		if !grew {
			break
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// Route is one API route served by a function.
type Route struct {
	// Method is the HTTP method, or "ANY".
	Method string
	// Path is the API Gateway path, with {param} and greedy {proxy+}
	// parameters.
	Path string
	// ID names the route's integration in the CDK app (<ID>Integration);
	// "" is the function's ID (its first route).
	ID string
	// Authz says how the function authenticates callers itself (the
	// platform's routes have no API Gateway authorizer): cdk-nag
	// AwsSolutions-APIG4's justification, kept next to the route.
	Authz string
	// Throttle, when set, is a route-level limit stricter than the
	// stage's.
	Throttle *Throttle
	// Output, when set, publishes the route's URL.
	Output *Output
}

// Secret is a secret a function reads: a JSON list of strings, newest
// first (two during a rotation).
type Secret struct {
	// ID is the secret's construct id ("StripeWebhookSecrets").
	ID string
	// EnvARN is the variable naming the secret (deployed); Env the one
	// holding the values directly, comma-separated (local development).
	EnvARN, Env string
	// Description says what it holds and how to set it.
	Description string
	// WhyNoRotation says why no rotation function can rotate it (the
	// justification of cdk-nag's AwsSolutions-SMG4).
	WhyNoRotation string
	// Output, when set, publishes its ARN: where an operator puts the
	// values.
	Output *Output
}

// Output is a stack output ID and the stage parameter /evp/<stage>/<Param>
// with the same value: a route's URL (the API's base URL and the route's
// path: where a provider is told to send), a secret's ARN.
type Output struct {
	ID, Param, Description string
}

// Key is the route's API Gateway route key ("POST /webhook/stripe").
func (r Route) Key() string { return r.Method + " " + r.Path }

// Throttle is a route's steady rate (requests per second) and burst.
type Throttle struct{ Rate, Burst int }

// Queues a function's event source mapping reads (QueueSource.Queue).
const (
	// QueueJobs is the job engine's wake queue (topology.JobsQueue).
	QueueJobs = topology.JobsQueueName
	// QueueImports receives the bucket's notifications for imports/
	// (topology.ImportsQueue).
	QueueImports = topology.ImportsQueueName
	// QueueTopic is the function's own topic's queue (a consumer's).
	QueueTopic = "<topic>"
	// QueueTopicDLQs is every topic's dead-letter queue: one mapping each.
	QueueTopicDLQs = "<topic>-dlq"
)

// QueueSource is an SQS event source mapping: the same settings deployed
// (the CDK app) and locally (the local stack's pollers).
type QueueSource struct {
	// Queue is one of the Queue* names.
	Queue string
	// Topic is the topic of a QueueTopic source.
	Topic string
	// BatchSize and BatchWindow shape a batch (a window needs a standard
	// queue).
	BatchSize   int
	BatchWindow time.Duration
	// MaxConcurrency caps the mapping's concurrent invocations
	// (ScalingConfig, at least 2); 0 sets none (deployed: the account's
	// concurrency; locally the poller default).
	MaxConcurrency int
	// ReportFailures: the handler answers events.SQSEventResponse and only
	// the messages it names are retried (ReportBatchItemFailures).
	ReportFailures bool
}

// Schedule is an EventBridge rule invoking the function: at a rate or
// daily at a UTC time, with a fixed input or EventBridge's scheduled
// event. The CDK app creates the rule; the local stack fires the same
// input at the same times (a rate schedule's cadence may be shortened
// locally through its Local setting).
type Schedule struct {
	// ID is the rule's construct id ("SweepSchedule"); Rule its name
	// under the stage prefix ("outbox-sweep": evp-<stage>-outbox-sweep).
	ID          string
	Rule        string
	Description string
	// Every is a rate schedule's period (whole minutes); zero for a daily
	// one.
	Every time.Duration
	// Daily is a daily schedule's UTC time.
	Daily *TimeOfDay
	// Input is what the target receives (a JSON object); nil sends
	// EventBridge's scheduled event.
	Input map[string]any
	// RetryAttempts and MaxEventAge bound EventBridge's retries of a
	// failed delivery.
	RetryAttempts int
	MaxEventAge   time.Duration
	// Local, when set, is the local stack's setting for a rate schedule's
	// cadence and its default there.
	Local *LocalCadence
}

// TimeOfDay is a UTC time of day.
type TimeOfDay struct{ Hour, Minute int }

// LocalCadence is a rate schedule's local period: the stack's Setting,
// Default when unset.
type LocalCadence struct {
	Setting string
	Default time.Duration
}

// Expression is the rule's EventBridge schedule expression:
// "rate(2 minutes)" or "cron(17 3 * * ? *)".
func (s Schedule) Expression() string {
	if s.Daily != nil {
		return fmt.Sprintf("cron(%d %d * * ? *)", s.Daily.Minute, s.Daily.Hour)
	}
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "day"}, {time.Hour, "hour"}, {time.Minute, "minute"}} {
		if s.Every%u.d == 0 {
			n := int(s.Every / u.d)
			if n == 1 {
				return "rate(1 " + u.name + ")"
			}
			return fmt.Sprintf("rate(%d %ss)", n, u.name)
		}
	}
	return "rate(" + s.Every.String() + ")"
}

// Next is the first time the schedule fires after t (a daily one; a rate
// schedule's runs are every Every from when it starts).
func (s Schedule) Next(t time.Time) time.Time {
	if s.Daily == nil {
		return t.Add(s.Every)
	}
	t = t.UTC()
	at := time.Date(t.Year(), t.Month(), t.Day(), s.Daily.Hour, s.Daily.Minute, 0, 0, time.UTC)
	if !at.After(t) {
		at = at.AddDate(0, 0, 1)
	}
	return at
}

// Validate refuses a descriptor the CDK app or the local stack could not
// honour.
func (f Function) Validate() error {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if f.Name == "" || f.Binary == "" || f.ID == "" || f.Description == "" {
		fail("name, binary, construct id and description are required")
	}
	if f.MemoryMB < 128 || f.MemoryMB > 10240 || f.Timeout < time.Second || f.Timeout > 15*time.Minute {
		fail("memory 128..10240 MB and timeout 1s..15m")
	}
	for _, s := range f.Secrets {
		if s.ID == "" || s.EnvARN == "" || s.Description == "" || s.WhyNoRotation == "" {
			fail("secret %q: construct id, ARN variable, description and why it is not rotated are required", s.ID)
		}
	}
	for _, q := range f.Queues {
		if q.BatchSize < 1 || (q.MaxConcurrency != 0 && q.MaxConcurrency < 2) || !q.ReportFailures {
			fail("queue %s: batch size at least 1, maximum concurrency 0 or at least 2, and partial batch responses", q.Queue)
		}
	}
	for _, s := range f.Schedules {
		daily := s.Daily != nil
		switch {
		case s.ID == "" || s.Rule == "" || s.Description == "":
			fail("schedule %q: construct id, rule name and description are required", s.Rule)
		case daily == (s.Every != 0):
			fail("schedule %s: a rate or a daily time, not both", s.Rule)
		case !daily && (s.Every < time.Minute || s.Every%time.Minute != 0):
			fail("schedule %s: a rate is whole minutes", s.Rule)
		case daily && (s.Daily.Hour < 0 || s.Daily.Hour > 23 || s.Daily.Minute < 0 || s.Daily.Minute > 59):
			fail("schedule %s: a daily time is 00:00..23:59", s.Rule)
		case s.RetryAttempts < 0 || s.RetryAttempts > 185 || s.MaxEventAge < time.Minute || s.MaxEventAge > 24*time.Hour:
			fail("schedule %s: 0..185 retries and a maximum event age of 1m..24h", s.Rule)
		case daily && s.Local != nil:
			fail("schedule %s: a daily schedule fires at its time locally too", s.Rule)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("function %s: %s", f.Name, strings.Join(errs, "; "))
	}
	return nil
}

// Wiring builds a function: Load reads and validates its configuration
// (what the binary's cold start does first), Build makes its Lambda
// handler from that configuration, its AWS clients and its runtime.
type Wiring struct {
	Load  func(r *envconf.Reader, top topology.Topology) (any, error)
	Build func(ctx context.Context, conf any, clients ClientSource, rt Runtime) (handler any, err error)
}

// ClientSource gives a function its AWS clients: deployed, its NewClients
// builds them from the default configuration chain (Config); the local
// stack and the tests hand over their emulator clients instead (Fill).
type ClientSource struct {
	Config aws.Config
	// Fill, when set, sets each AWS client field of dst (a pointer to the
	// function's Clients struct) to the caller's client of that service.
	Fill func(dst any) error
}

// Wire is the Wiring of a function whose wiring package has the usual
// shape: load (environment → Config), clients (its NewClients) and build
// (New, returning the handler Lambda starts).
func Wire[C, K any](load func(*envconf.Reader, topology.Topology) (C, error), clients func(aws.Config) K, build func(context.Context, C, K, Runtime) (any, error)) Wiring {
	return Wiring{
		Load: func(r *envconf.Reader, top topology.Topology) (any, error) { return load(r, top) },
		Build: func(ctx context.Context, conf any, src ClientSource, rt Runtime) (any, error) {
			c, ok := conf.(C)
			if !ok {
				return nil, fmt.Errorf("wire: a %T is not this function's configuration", conf)
			}
			var cl K
			if src.Fill != nil {
				if err := src.Fill(&cl); err != nil {
					return nil, err
				}
			} else {
				cl = clients(src.Config)
			}
			return build(ctx, c, cl, rt)
		},
	}
}

// IgnoreTopology adapts a Load that reads no topology.
func IgnoreTopology[C any](load func(*envconf.Reader) (C, error)) func(*envconf.Reader, topology.Topology) (C, error) {
	return func(r *envconf.Reader, _ topology.Topology) (C, error) { return load(r) }
}
