package outbox

import (
	"slices"
	"time"
)

// Status of a dispatch row.
type Status string

const (
	// Producer side.
	StatusPending      Status = "pending"
	StatusEnqueued     Status = "enqueued"
	StatusFailed       Status = "failed"
	StatusDLQAbandoned Status = "dlq_abandoned"
	// Consumer side.
	StatusProcessing Status = "processing"
	StatusCompleted  Status = "completed"
	StatusDLQ        Status = "dlq"
)

// Sendable statuses: a row in one of these has not provably reached its
// queue, so a sender (ingest re-drive, the sweeper) may claim it.
var Sendable = []Status{StatusPending, StatusFailed}

// Swept statuses are the ones the sweeper acts on: sendable rows (to send
// them) and processing rows (to settle a consumer lease that ended without
// a recorded outcome). A row created in one of them is in the sweeper's
// due index from its creation until its outcome (Settled); the
// transitions in between keep its index keys, so they cost no index write.
var Swept = []Status{StatusPending, StatusFailed, StatusProcessing}

// Swept reports whether the sweeper acts on rows in status s.
func (s Status) Swept() bool { return slices.Contains(Swept, s) }

// Settled statuses are a dispatch's outcomes: a row in one has left the
// sweeper's due index for good.
var Settled = []Status{StatusCompleted, StatusDLQ, StatusDLQAbandoned}

// Settled reports whether s is an outcome.
func (s Status) Settled() bool { return slices.Contains(Settled, s) }

// Row is one outbox row: the dispatch of one event to one topic.
type Row struct {
	// Key is the event's storage key (ledger.Key).
	Key         string
	EventID     string
	Topic       string
	TenantID    string
	Type        string
	Status      Status
	Attempts    int
	MaxAttempts int
	// NextRetryAt is when the sweeper may pick the row up. While a sender
	// holds the lease it equals LeaseUntil, so the sweeper's index query
	// never even sees a held row.
	NextRetryAt time.Time
	LeaseUntil  time.Time
	LeaseOwner  string
	LastError   string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// ErasedAt is when the event's subject was erased: the row is the
	// erasure marker of its dispatch, so a message still in flight is
	// never delivered (a consumer's claim refuses it), dead-lettered into
	// an incident, or replayed. Zero for a row of an event not erased.
	ErasedAt time.Time
	// Receipted: the row is stored pending under its dispatcher's lease,
	// and the dispatcher's receipt records its send (a batch dispatch
	// records its sends in one receipt instead of marking each row,
	// Receipts). A store reads such a row as enqueued (Status), which is
	// what it is, and its next write to the row records that.
	Receipted bool
	// DeliveryAttempts are the dispatch's delivery attempts, oldest first
	// (the latest KeptAttempts; Attempts counts failed sends to the queue).
	DeliveryAttempts []Attempt
}

// Leased reports whether some sender holds the row at now.
func (r Row) Leased(now time.Time) bool { return r.LeaseUntil.After(now) }

// Claimable reports whether a sender may take the row at now.
func (r Row) Claimable(now time.Time) bool {
	return slices.Contains(Sendable, r.Status) && !r.Leased(now)
}

// Delivered reports whether the row provably reached its queue (or went
// past it): a retry must never re-send it.
func (r Row) Delivered() bool {
	switch r.Status {
	case StatusEnqueued, StatusProcessing, StatusCompleted, StatusDLQ:
		return true
	}
	return false
}

// Ref names the row.
func (r Row) Ref() RowRef { return RowRef{Key: r.Key, Topic: r.Topic} }
