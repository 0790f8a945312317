package admin

import (
	"context"
	"time"

	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/replay"
	"github.com/siteswarm/eventplatform/internal/subscriberhealth"
)

// Keys are the active bearer keys (a cached secret).
type Keys interface {
	// Active returns the keys to accept now.
	Active(ctx context.Context) []string
	// Reload re-reads the keys (rate-limited) after a miss, for a key
	// rotated moments ago; changed reports whether the set changed.
	Reload(ctx context.Context) (keys []string, changed bool)
}

// Views are the operator views and status changes (implemented by
// *operator.Views), shared with the replay Lambda and the CLI, so the admin
// API and `evp` show the same thing.
type Views interface {
	// ViewEvent is an event's ledger item, per-topic outbox rows and
	// incidents (an error wrapping ledger.ErrNotFound for none).
	ViewEvent(ctx context.Context, q operator.EventQuery) (operator.EventView, error)
	// ViewIncident is an incident with its message (incident.ErrNotFound).
	ViewIncident(ctx context.Context, id string) (operator.IncidentView, error)
	// Transition is an operator's status change (triage, ignore).
	Transition(ctx context.Context, id string, to incident.Status, actor, note string) (incident.Incident, error)
	// ListEvents pages a tenant's recent events.
	ListEvents(ctx context.Context, q operator.TenantQuery) (operator.EventPage, error)
	// Attempts is an event's delivery attempts, filtered.
	Attempts(ctx context.Context, q operator.AttemptQuery) (operator.AttemptsView, error)
}

// Replayer replays one incident (implemented by *replay.Service, as the
// Step Functions replay and `evp dlq replay` do).
type Replayer interface {
	// ReplayOne replays one incident; problems are outcomes.
	ReplayOne(ctx context.Context, r replay.Request, id string) replay.Outcome
	// Replay runs a request by filter in-process (the console's bulk
	// replay; a dry run counts and samples).
	Replay(ctx context.Context, r replay.Request) (replay.Summary, error)
}

// Incidents lists incidents.
type Incidents interface {
	List(ctx context.Context, f incident.Filter) (incident.Page, error)
}

// QueueStats reports every topic queue's depth.
type QueueStats interface {
	Depths(ctx context.Context) ([]QueueDepth, error)
}

// QueueDepth is one topic's queue and dead-letter queue.
type QueueDepth struct {
	Topic string `json:"topic"`
	// Visible and InFlight are the queue's approximate counts.
	Visible  int `json:"visible"`
	InFlight int `json:"inFlight"`
	Delayed  int `json:"delayed"`
	// DeadLetters are the messages waiting in the DLQ (the archiver drains
	// it at once, so anything here for long means the archiver is failing).
	DeadLetters int `json:"deadLetters"`
}

// Check is a named health probe.
type Check struct {
	Name  string
	Probe func(ctx context.Context) error
}

// Breakers are the topics' subscriber health (implemented by
// *health.Operator): GET /admin/topics, POST /admin/topics/{topic}/pause
// and /resume, the console's overview.
type Breakers interface {
	List(ctx context.Context) ([]subscriberhealth.TopicView, error)
	Pause(ctx context.Context, topic, who, why string) (subscriberhealth.Health, error)
	Resume(ctx context.Context, topic, who string) (subscriberhealth.Health, error)
}

// DeliveryStats are the topics' recent delivery figures from the
// consumers' own metrics (deployed: CloudWatch, which extracts them from
// the consumers' EMF lines; locally the stack's metric store), for the
// console's overview.
type DeliveryStats interface {
	// Deliveries reports what each topic's consumer did in [since, until).
	Deliveries(ctx context.Context, topics []string, since, until time.Time) (map[string]TopicDeliveries, error)
}

// TopicDeliveries is one topic's deliveries over a window.
type TopicDeliveries struct {
	// Delivered counts the messages whose handler succeeded
	// (consume.MetricProcessed); Failed their failures
	// (consume.MetricFailed, a message failing twice counts twice).
	Delivered int `json:"delivered"`
	Failed    int `json:"failed"`
	// P50 and P99 are the delivery latency's percentiles (event time to
	// delivered, consume.MetricLag); zero without deliveries.
	P50 time.Duration `json:"p50"`
	P99 time.Duration `json:"p99"`
}
