package consume

import (
	"context"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/siteswarm/eventplatform/internal/outbox"
)

// Handler runs a topic's side effect for one message. Its error says what
// happens next: nil completes the message, Permanent sends it to the DLQ,
// anything else retries it (RetryAfter to choose the delay). The context
// ends shortly before the Lambda deadline so the runtime can still record
// the outcome.
type Handler interface {
	Handle(ctx context.Context, m Message) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, m Message) error

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, m Message) error { return f(ctx, m) }

// BatchHandler runs a topic's side effect for the claimed messages of a
// batch at once (for example one archive object per batch). It returns one
// error per message, in order (nil for a success), or a nil slice when all
// succeeded.
type BatchHandler interface {
	HandleBatch(ctx context.Context, ms []Message) []error
}

// Rows is the consumer side of the outbox rows: the (event, topic)
// idempotency record. Every write is conditional.
type Rows interface {
	// BeginProcessing claims the row for p.Owner until p.Until: allowed
	// from any status except completed and a processing row whose lease is
	// still live. A missing row (a message that never went through the
	// outbox) is created in processing, but only while the event's ledger
	// item exists: a row never outlives its ledger item (LedgerMissing
	// otherwise). The result says whether the claim was taken, the row is
	// completed, another holder's lease is live, or the ledger is gone.
	BeginProcessing(ctx context.Context, p Processing) (Claim, error)
	// MarkCompleted records the owner's success. It returns
	// outbox.ErrLeaseLost when the owner no longer holds the row.
	MarkCompleted(ctx context.Context, c Completion) error
	// MarkRetry hands the row back (status enqueued, lease cleared) with
	// lastError, after a failure by the owner; r.RetryAt is when the
	// message is expected back. It returns outbox.ErrLeaseLost when the
	// owner no longer holds the row.
	MarkRetry(ctx context.Context, r Release) error
}

// Processing is a claim request.
type Processing struct {
	Row                     outbox.RowRef
	EventID, TenantID, Type string
	// Owner is the SQS message id.
	Owner string
	// Until is the lease expiry: the Lambda deadline.
	Until time.Time
	Now   time.Time
}

// Completion is the owner's success.
type Completion struct {
	Row   outbox.RowRef
	Owner string
	Now   time.Time
	// Attempt is the delivery attempt the completion records, in the same
	// write (N zero: none), after Log.Lost; Log is what the claim learned
	// of the row's attempts.
	Attempt outbox.Attempt
	Log     outbox.AttemptLog
}

// Release hands a row back after a failure.
type Release struct {
	Row       outbox.RowRef
	Owner     string
	LastError string
	// RetryAt is when the message is expected back (zero when it went to
	// the DLQ).
	RetryAt time.Time
	Now     time.Time
	// Attempt and Log: as Completion's.
	Attempt outbox.Attempt
	Log     outbox.AttemptLog
}

// ClaimState is the outcome of BeginProcessing.
type ClaimState int

const (
	// Claimed: the caller holds the row and runs the handler.
	Claimed ClaimState = iota + 1
	// AlreadyCompleted: the side effect happened already; acknowledge.
	AlreadyCompleted
	// Busy: another holder's lease is live; retry after it.
	Busy
	// LedgerMissing: neither the row nor the event's ledger item exists
	// (past its retention, or never written): nothing can record the side
	// effect, so the message goes to the DLQ, where replaying its incident
	// restores the event.
	LedgerMissing
	// Erased: the event's subject was erased (the row carries the
	// erasure marker): the message holds data that must not be delivered
	// or dead-lettered; acknowledge it without running the handler.
	Erased
)

// Claim is BeginProcessing's answer.
type Claim struct {
	State ClaimState
	// LeaseUntil is the live lease's expiry when State is Busy.
	LeaseUntil time.Time
	// Attempt counts the claims of this message (Processing.Owner) when
	// State is Claimed: 1 on its first. A FIFO topic gives up by it: a
	// message held behind a failing one of its group is received, and its
	// receive count grows, without being attempted.
	Attempt int
	// Log is what the claim learned of the row's delivery attempts (when
	// State is Claimed), handed back with the outcome.
	Log outbox.AttemptLog
}

// Queue is the topic's queue as the runtime needs it: visibility changes
// for retries and the dead-letter queue for poison.
type Queue interface {
	// Delay makes in-flight messages visible again after their delays.
	// Failures are not fatal (the message then returns after the queue's
	// visibility timeout), so they are reported, not retried.
	Delay(ctx context.Context, ds []Delay) error
	// DeadLetter sends m to the topic's DLQ: body and message attributes
	// unchanged, plus errorCode, errorMessage and failedAt.
	DeadLetter(ctx context.Context, m events.SQSMessage, r Reason) error
	// Requeue sends a copy of m back to the topic queue, visible after
	// delay: a fresh message, whose receive count starts again, for a held
	// message SQS's redrive would otherwise take on its next receive. The
	// caller acknowledges m once the copy is sent.
	Requeue(ctx context.Context, m events.SQSMessage, delay time.Duration) error
}

// Delay is one visibility change.
type Delay struct {
	MessageID     string
	ReceiptHandle string
	// Visibility is how long the message stays invisible from now.
	Visibility time.Duration
}

// Reason is why a message was dead-lettered.
type Reason struct {
	Code    string
	Message string
	// Summary is Message fit for alerts and logs: the same text, except
	// that a subscriber's answer it quotes is named by length and hash
	// (see Redacted).
	Summary  string
	FailedAt time.Time
}

// Incidents attests replay outcomes (implemented by the incident store).
type Incidents interface {
	// ResolveReplay marks a retrying incident resolved (resolvedAt=at, resolvedBy="replay").
	// It is idempotent: an incident that is not retrying is left alone without error.
	ResolveReplay(ctx context.Context, incidentID string, at time.Time) error
}

// Breaker is the topic's subscriber health (internal/subscriberhealth). The runtime
// tells it each batch's subscriber outcomes and asks it, before
// dead-lettering a message whose last attempt failed transiently, whether
// the topic's messages are being held (its breaker is open, probing,
// paused, or just recovered). Neither may cost I/O on a healthy topic's
// happy path.
type Breaker interface {
	// Observe is told the outcomes of one batch's handler runs. It never
	// fails the batch: a breaker that cannot record leaves the topic as it
	// is.
	Observe(ctx context.Context, o Observation)
	// Hold reports whether failed messages are held rather than
	// dead-lettered, and until when.
	Hold(ctx context.Context) (Hold, error)
	// Probing reports whether the topic's breaker is probing the
	// subscriber (half open), for an attempt's record: without I/O while
	// the consumer knows the topic healthy.
	Probing(ctx context.Context) bool
}

// Observation is a batch's subscriber outcomes: only messages whose
// handler ran count (a claim or payload failure says nothing about the
// subscriber).
type Observation struct {
	// Failures: deliveries that failed transiently (5xx, 429, timeouts,
	// connection errors).
	Failures int
	// Answers: deliveries the subscriber answered: successes, and
	// permanent refusals (4xx poison: the subscriber is up).
	Answers int
	// LastError is one failure's message (empty without failures).
	LastError string
}

// Hold is a breaker's answer.
type Hold struct {
	Holding bool
	// Until is when the breaker probes the subscriber next (zero:
	// unknown): a held message's delay.
	Until time.Time
}

// BatchRows is an optional port of Rows: claims and completions of many
// messages in few requests, for a BatchHandler's batch (the per-message
// Handler path claims one at a time). Each result is exactly what the
// single method would have returned for that item: an implementation that
// cannot batch an item falls back to the single method for it.
type BatchRows interface {
	// BeginProcessingBatch claims each ps[i] as BeginProcessing would; the
	// result has one entry per request, in order.
	BeginProcessingBatch(ctx context.Context, ps []Processing) []ClaimResult
	// MarkCompletedBatch records each cs[i] as MarkCompleted would; the
	// result has one error (nil for success) per completion, in order.
	MarkCompletedBatch(ctx context.Context, cs []Completion) []error
}

// ClaimResult is one answer of BeginProcessingBatch.
type ClaimResult struct {
	Claim Claim
	Err   error
}
