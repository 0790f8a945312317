package topology

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ConsumerKind names the consumer binary that serves a topic,
// functions/consumer-<kind>. The kinds a deployment can run are registered
// in internal/wire/consumerkinds (which the CDK app and the local stack
// check a topology against); these are the built-in ones, named here so
// the default topology can use them.
type ConsumerKind string

const (
	// ConsumerHTTP delivers events to a subscriber URL (Standard Webhooks signing).
	ConsumerHTTP ConsumerKind = "http"
	// ConsumerArchive writes batches of events to S3 as NDJSON.
	ConsumerArchive ConsumerKind = "archive"
	// ConsumerPurge runs the cache purge service.
	ConsumerPurge ConsumerKind = "purge"
)

// EventSourceVisibility is the visibility timeout AWS asks of a queue that
// feeds a Lambda event source: six times the function's timeout plus the
// mapping's maximum batching window, so a batch that waited out its window
// and then retried its function inside one receive never becomes visible
// (and is received again) while still being worked on.
func EventSourceVisibility(functionTimeout, batchWindow time.Duration) time.Duration {
	return 6*functionTimeout + batchWindow
}

// Topic is one SQS queue (plus its redrive DLQ) and the consumer Lambda on it.
type Topic struct {
	Name     string
	Consumer ConsumerKind
	// BatchSize and BatchWindow configure the SQS event source mapping.
	BatchSize   int
	BatchWindow time.Duration
	// MaxConcurrency caps concurrent consumer invocations (event source
	// mapping ScalingConfig, minimum 2 on AWS).
	MaxConcurrency int
	// VisibilityTimeout of the topic queue; it must cover the consumer's
	// timeout, and a deployed queue's must be EventSourceVisibility of the
	// consumer's timeout and batch window (the CDK app refuses less).
	VisibilityTimeout time.Duration
	// ConsumerTimeout is the consumer Lambda's timeout.
	ConsumerTimeout time.Duration
	// MaxReceiveCount is the redrive policy: receives before the DLQ.
	MaxReceiveCount int
	// MaxOutboxAttempts bounds the outbox sweeper's resends before the
	// dispatch is abandoned to an incident.
	MaxOutboxAttempts int
	// FIFO topics keep order per message group: the tenant's sequence of
	// the entity an event is about (subject.OrderingKey: what a provider's
	// rules say, such as a customer; an internal producer's subject), else
	// the tenant's.
	FIFO bool
	// Breaker is the topic's subscriber-health policy (zero: the
	// defaults).
	Breaker Breaker
}

// RedriveMaxReceiveCount is the topic queue's redrive policy: the receives
// after which SQS moves a message to the DLQ. On a standard queue it is
// MaxReceiveCount (the consumer dead-letters on that receive itself; SQS is
// the backstop). On a FIFO queue the consumer gives up by attempts instead,
// and a message is received without being attempted while an earlier one
// of its group in the same batch keeps failing — at most BatchSize-1
// earlier ones, each with its MaxReceiveCount attempts — so SQS's count is
// set above what that can reach (MaxReceiveCount × (BatchSize+1), at most
// SQS's 1,000) and never redrives a message before its own attempts ran.
func (tp Topic) RedriveMaxReceiveCount() int {
	if !tp.FIFO {
		return tp.MaxReceiveCount
	}
	return min(tp.MaxReceiveCount*(tp.BatchSize+1), maxRedriveReceives)
}

// maxRedriveReceives is SQS's limit on a redrive policy's maxReceiveCount.
const maxRedriveReceives = 1000

// Producer is a registered source and the event type patterns it may publish.
type Producer struct {
	Source string
	Types  []string
	// Provider names the webhook provider whose verified events this
	// source forwards ("" for internal services); it is the source's own
	// name. The provider's rules (webhook/providers, which checks the
	// name is registered) decide how its events are keyed, identified,
	// ordered and found by an erasure.
	Provider string
}

// Route sends every event type that matches Pattern to Topics.
type Route struct {
	Pattern string
	Topics  []string
}

// Topology is the whole wiring.
type Topology struct {
	Topics    []Topic
	Producers []Producer
	Routes    []Route
}

// Topic returns the named topic.
func (t Topology) Topic(name string) (Topic, bool) {
	for _, tp := range t.Topics {
		if tp.Name == name {
			return tp, true
		}
	}
	return Topic{}, false
}

// TopicNames returns every topic name in declaration order.
func (t Topology) TopicNames() []string {
	names := make([]string, len(t.Topics))
	for i, tp := range t.Topics {
		names[i] = tp.Name
	}
	return names
}

// FIFOTopics lists the topics whose queues are FIFO (what a queue sender
// needs to set group and deduplication ids).
func (t Topology) FIFOTopics() map[string]bool {
	out := map[string]bool{}
	for _, tp := range t.Topics {
		if tp.FIFO {
			out[tp.Name] = true
		}
	}
	return out
}

// Producer returns the registered producer for source.
func (t Topology) Producer(source string) (Producer, bool) {
	for _, p := range t.Producers {
		if p.Source == source {
			return p, true
		}
	}
	return Producer{}, false
}

// Allows reports whether the producer may publish the event type.
func (p Producer) Allows(eventType string) bool {
	for _, pat := range p.Types {
		if Match(pat, eventType) {
			return true
		}
	}
	return false
}

// Route returns the topics an event type fans out to, deduplicated, in
// topology declaration order (so the result is stable whatever the route
// order).
func (t Topology) Route(eventType string) []string {
	hit := map[string]bool{}
	for _, r := range t.Routes {
		if Match(r.Pattern, eventType) {
			for _, tp := range r.Topics {
				hit[tp] = true
			}
		}
	}
	var out []string
	for _, tp := range t.Topics {
		if hit[tp.Name] {
			out = append(out, tp.Name)
		}
	}
	return out
}

// Match reports whether an event type matches a pattern. A pattern is either
// an exact type or a dotted prefix ending in ".*", which matches one or more
// further segments ("audit.*" matches "audit.login" and "audit.user.deleted",
// not "audit").
func Match(pattern, eventType string) bool {
	if prefix, ok := strings.CutSuffix(pattern, ".*"); ok {
		return strings.HasPrefix(eventType, prefix+".") && len(eventType) > len(prefix)+1
	}
	return pattern == eventType
}

// The names' syntax, each the regular expression its comment quotes
// written out over bytes (all ASCII: a byte outside it never matches, as
// in the regexp). Hand-written because a package-level regexp is compiled
// by every cold start of every function that links the topology;
// syntax_test.go holds each to its regexp (matchtest).

// sourceNamePattern is a producer's source name, as Validate's error
// quotes it (validSourceName).
const sourceNamePattern = `^[a-z][a-z0-9-]{0,63}$`

// validSourceName is sourceNamePattern.
func validSourceName(s string) bool {
	return s != "" && len(s) <= 64 && words(s, '-', 0)
}

// validConsumerKind is ^[a-z][a-z0-9-]*$.
func validConsumerKind(s string) bool { return words(s, '-', 0) }

// validTopicName is ^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)*$.
func validTopicName(s string) bool { return words(s, '-', '.') }

// validTypePattern is an event type or a prefix ending in ".*",
// ^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*(\.\*)?$.
func validTypePattern(s string) bool {
	return words(strings.TrimSuffix(s, ".*"), '_', '.')
}

// words reports whether s is one or more words separated by sep (0: one
// word), each a lowercase letter then lowercase letters, digits or inner.
func words(s string, inner, sep byte) bool {
	start := true
	for i := range len(s) {
		switch c := s[i]; {
		case start:
			if c < 'a' || c > 'z' {
				return false
			}
			start = false
		case sep != 0 && c == sep:
			start = true
		case !('a' <= c && c <= 'z') && !('0' <= c && c <= '9') && c != inner:
			return false
		}
	}
	return !start
}

// Validate checks the topology is internally consistent. Both the runtime (at
// cold start) and the CDK app (at synth) call it.
func (t Topology) Validate() error {
	var errs []error
	seen := map[string]bool{}
	for _, tp := range t.Topics {
		if !validTopicName(tp.Name) || len(tp.Name) > 60 {
			errs = append(errs, fmt.Errorf("topic %q: name must be lowercase dotted words of at most 60 characters", tp.Name))
		}
		if seen[tp.Name] {
			errs = append(errs, fmt.Errorf("topic %q declared twice", tp.Name))
		}
		seen[tp.Name] = true
		if !validConsumerKind(string(tp.Consumer)) {
			errs = append(errs, fmt.Errorf("topic %q: consumer kind %q must be lowercase letters, digits and hyphens (it names the binary consumer-<kind>)", tp.Name, tp.Consumer))
		}
		if tp.BatchSize < 1 || tp.BatchSize > 10000 || (tp.FIFO && tp.BatchSize > 10) {
			errs = append(errs, fmt.Errorf("topic %q: batch size %d out of range (1..10000, FIFO 1..10)", tp.Name, tp.BatchSize))
		}
		if tp.BatchSize > 10 && tp.BatchWindow <= 0 {
			errs = append(errs, fmt.Errorf("topic %q: batch size above 10 needs a batch window", tp.Name))
		}
		if tp.FIFO && tp.BatchWindow > 0 {
			errs = append(errs, fmt.Errorf("topic %q: a FIFO topic takes no batch window (SQS FIFO event sources have none)", tp.Name))
		}
		if tp.BatchWindow < 0 || tp.BatchWindow > 5*time.Minute {
			errs = append(errs, fmt.Errorf("topic %q: batch window %s out of range (0..5m)", tp.Name, tp.BatchWindow))
		}
		if tp.MaxConcurrency != 0 && (tp.MaxConcurrency < 2 || tp.MaxConcurrency > 1000) {
			errs = append(errs, fmt.Errorf("topic %q: max concurrency %d out of range (2..1000, or 0 for unbounded)", tp.Name, tp.MaxConcurrency))
		}
		if tp.ConsumerTimeout <= 0 || tp.ConsumerTimeout > 15*time.Minute {
			errs = append(errs, fmt.Errorf("topic %q: consumer timeout %s out of range", tp.Name, tp.ConsumerTimeout))
		}
		if tp.VisibilityTimeout < tp.ConsumerTimeout || tp.VisibilityTimeout > 12*time.Hour {
			errs = append(errs, fmt.Errorf("topic %q: visibility timeout %s must cover the consumer timeout %s", tp.Name, tp.VisibilityTimeout, tp.ConsumerTimeout))
		}
		if tp.MaxReceiveCount < 1 || tp.MaxReceiveCount > 1000 {
			errs = append(errs, fmt.Errorf("topic %q: maxReceiveCount %d out of range (1..1000)", tp.Name, tp.MaxReceiveCount))
		}
		if tp.MaxOutboxAttempts < 1 || tp.MaxOutboxAttempts > 20 {
			errs = append(errs, fmt.Errorf("topic %q: max outbox attempts %d out of range (1..20)", tp.Name, tp.MaxOutboxAttempts))
		}
		if err := tp.Breaker.WithDefaults().Validate(); err != nil {
			errs = append(errs, fmt.Errorf("topic %q: breaker: %w", tp.Name, err))
		}
	}
	sources := map[string]bool{}
	for _, p := range t.Producers {
		if !validSourceName(p.Source) {
			errs = append(errs, fmt.Errorf("producer %q: source must match %s", p.Source, sourceNamePattern))
		}
		if sources[p.Source] {
			errs = append(errs, fmt.Errorf("producer %q declared twice", p.Source))
		}
		sources[p.Source] = true
		if len(p.Types) == 0 {
			errs = append(errs, fmt.Errorf("producer %q: no event types", p.Source))
		}
		if p.Provider != "" && p.Provider != p.Source {
			errs = append(errs, fmt.Errorf("producer %q: a provider's producer is named after it (provider %q)", p.Source, p.Provider))
		}
		for _, pat := range p.Types {
			if !validTypePattern(pat) {
				errs = append(errs, fmt.Errorf("producer %q: bad type pattern %q", p.Source, pat))
			}
		}
	}
	for _, r := range t.Routes {
		if !validTypePattern(r.Pattern) {
			errs = append(errs, fmt.Errorf("route %q: bad type pattern", r.Pattern))
		}
		if len(r.Topics) == 0 {
			errs = append(errs, fmt.Errorf("route %q: no topics", r.Pattern))
		}
		for _, tp := range r.Topics {
			if !seen[tp] {
				errs = append(errs, fmt.Errorf("route %q: unknown topic %q", r.Pattern, tp))
			}
		}
	}
	return errors.Join(errs...)
}

// The job engine's wake queue (internal/jobs), one per stage with its
// redrive DLQ: not a topic (no route publishes to it), but provisioned like
// one by the CDK app and the local stack, so its definition lives here
// beside the topics'. Its visibility covers a worker run; a wake that keeps
// failing goes to the DLQ after JobsQueueMaxReceiveCount receives (the
// jobs sweep still finds its job).
const (
	JobsQueueName              = "jobs"
	JobsQueueVisibilityTimeout = 4 * time.Minute
	JobsQueueMaxReceiveCount   = 5
)

// JobsQueue is the wake queue as a queue definition: its names are
// JobsQueue().QueueName(prefix) and DLQName(prefix).
func JobsQueue() Topic {
	return Topic{Name: JobsQueueName, VisibilityTimeout: JobsQueueVisibilityTimeout, MaxReceiveCount: JobsQueueMaxReceiveCount}
}

// The file imports' notification queue (spec 003 file-drop-run), one per
// stage with its redrive DLQ: the platform bucket sends its object
// creations under ImportsPrefix to it and the import-trigger function
// consumes it. Like the jobs queue it is no topic, but the CDK app and the
// local stack provision it alike, so its definition lives here; the
// visibility is Lambda's guidance for the trigger's timeout.
const (
	ImportsQueueName            = "imports"
	ImportsPrefix               = "imports/"
	ImportTriggerTimeout        = 30 * time.Second
	ImportsQueueMaxReceiveCount = 5
)

// ImportsQueue is the imports queue as a queue definition: its names are
// ImportsQueue().QueueName(prefix) and DLQName(prefix).
func ImportsQueue() Topic {
	return Topic{Name: ImportsQueueName, ConsumerTimeout: ImportTriggerTimeout,
		VisibilityTimeout: EventSourceVisibility(ImportTriggerTimeout, 0), MaxReceiveCount: ImportsQueueMaxReceiveCount}
}

// BucketNotification is an S3 event notification of the platform bucket
// to one of the stage's queues: the CDK app configures the deployed bucket
// from it and the local stack its emulator's, so the two cannot differ.
type BucketNotification struct {
	// Queue is the queue's name (ImportsQueueName).
	Queue string
	// Events are S3's event names, e.g. "s3:ObjectCreated:*".
	Events []string
	// Prefix and Suffix filter the object keys ("": none).
	Prefix, Suffix string
}

// BucketNotifications are the platform bucket's notifications: every
// object created under ImportsPrefix goes to the imports queue.
func BucketNotifications() []BucketNotification {
	return []BucketNotification{{Queue: ImportsQueueName, Events: []string{"s3:ObjectCreated:*"}, Prefix: ImportsPrefix}}
}

// QueueName is the SQS queue name of a topic under a resource prefix such as
// "evp-prod". SQS names allow [A-Za-z0-9_-], so the topic's dots become
// hyphens; FIFO queues need the ".fifo" suffix.
func (tp Topic) QueueName(prefix string) string {
	return queueName(prefix, tp.Name, "", tp.FIFO)
}

// DLQName is the SQS name of the topic's redrive dead-letter queue (FIFO if
// the topic is: SQS requires the DLQ of a FIFO queue to be FIFO).
func (tp Topic) DLQName(prefix string) string {
	return queueName(prefix, tp.Name, "-dlq", tp.FIFO)
}

func queueName(prefix, topic, suffix string, fifo bool) string {
	n := strings.ReplaceAll(topic, ".", "-") + suffix
	if prefix != "" {
		n = prefix + "-" + n
	}
	if fifo {
		n += ".fifo"
	}
	return n
}

// Clone returns a deep copy, so tests can tweak a topology without touching
// the default.
func (t Topology) Clone() Topology {
	c := Topology{Topics: slices.Clone(t.Topics)}
	for _, p := range t.Producers {
		p.Types = slices.Clone(p.Types) // every other field is a value
		c.Producers = append(c.Producers, p)
	}
	for _, r := range t.Routes {
		r.Topics = slices.Clone(r.Topics)
		c.Routes = append(c.Routes, r)
	}
	return c
}
