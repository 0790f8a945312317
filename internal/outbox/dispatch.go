package outbox

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/siteswarm/eventplatform/internal/kit/truncate"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
)

// Message is what goes onto a topic queue.
type Message struct {
	Topic string
	// Key is the event's storage key (ledger.Key), carried as the eventKey
	// attribute so a consumer finds the outbox row without recomputing it.
	Key      string
	EventID  string
	TenantID string
	Type     string
	// OrderingKey is the entity a FIFO topic keeps in order
	// (ledger.Record.OrderingKey): the message group is the tenant's
	// sequence of that entity; empty, the tenant's whole sequence.
	OrderingKey string
	// Body is the envelope JSON (payload claim-checked if large).
	Body []byte
	// ReplayOf is the incident id when an operator replays an incident.
	ReplayOf string
	// DedupID overrides the FIFO deduplication id (default: the event's
	// key, so provider retries and re-drives inside SQS's window are
	// dropped, and two tenants' events of one id are not). Each replay sets
	// its own, so a second replay of one incident is not dropped as a copy
	// of the first.
	DedupID string
	// TraceHeader is the X-Ray trace header carried as AWSTraceHeader.
	TraceHeader string
}

// Row is the outbox row the message dispatches.
func (m Message) Row() RowRef { return RowRef{Key: m.Key, Topic: m.Topic} }

// Sender puts a message on its topic's queue.
type Sender interface {
	Send(ctx context.Context, m Message) error
}

// Store is the outbox row persistence a dispatcher needs. Every write is
// conditional on the caller holding the row's lease, so two senders can
// never both believe they own a row.
type Store interface {
	// Claim takes the lease on a sendable, unleased row. It returns false
	// (and no error) when the row is held, already delivered, or missing.
	Claim(ctx context.Context, c ClaimParams) (bool, error)
	// MarkEnqueued records a successful send by the lease owner. It returns
	// ErrLeaseLost when the row moved on meanwhile (for example a consumer
	// already took it), which is not a failure of the send.
	MarkEnqueued(ctx context.Context, r RowRef, owner string, now time.Time) error
	// MarkFailed records a failed send by the lease owner: attempts+1,
	// lastError, nextRetryAt, lease released. A row carrying the erasure
	// marker (Row.ErasedAt) is never sent again (no claim takes it), so its
	// failure also takes it out of the sweeper's due index instead of
	// scheduling a retry nobody would make.
	MarkFailed(ctx context.Context, f Failure) error
}

// RowRef names one outbox row: the event's storage key and the topic.
type RowRef struct {
	Key, Topic string
}

func (r RowRef) String() string { return r.Key + "/" + r.Topic }

// ClaimParams ask for a row's lease.
type ClaimParams struct {
	Row   RowRef
	Owner string
	Now   time.Time
	Lease time.Duration
}

// Failure is a failed send to record.
type Failure struct {
	Row     RowRef
	EventID string
	Owner   string
	// Attempts is the row's attempt count after this failure.
	Attempts    int
	Err         string
	NextRetryAt time.Time
	Now         time.Time
}

// ErrLeaseLost means a conditional outbox write found the row no longer held
// by the caller.
var ErrLeaseLost = errors.New("outbox: lease lost")

// ErrRowChanged means a dispatch row was not in the state its caller read
// (a conditional write on a row as seen, or a row created meanwhile).
var ErrRowChanged = errors.New("outbox: dispatch row changed concurrently")

// ErrErased means a write that would have copied an event's data (an
// incident opened from its dead letter, …) was refused because the event's
// subject was erased: its dispatch row carries the erasure marker
// (Row.ErasedAt), checked in the same conditional write. Nothing was
// written; the writer drops what it meant to copy (objects it stored first
// are where the erasure looks after its writers' window:
// docs/architecture.md §5, guarantee 12).
var ErrErased = errors.New("outbox: the event's subject was erased")

// Dispatcher sends claimed rows and records each outcome.
type Dispatcher struct {
	Sender Sender
	Store  Store
	Now    func() time.Time
	Log    *slog.Logger
	// Later, when set, runs the record of a successful single send
	// (MarkEnqueued) after the caller has its answer (afterward.Go: ingest
	// answers "enqueued" once the message is on its queue, and writes the
	// mark after the answer, inside the same invocation). The row stays
	// pending under the sender's lease until then, so nothing can take it;
	// a mark that never runs (the environment died after the answer) is a
	// mark that failed: the sweeper re-sends the row once the lease ends.
	// Nil: the mark is written before Dispatch returns.
	Later func(ctx context.Context, work func(context.Context))
}

// Job is one claimed row to send.
type Job struct {
	Message Message
	Owner   string
	// Attempts is the row's attempt count before this send.
	Attempts int
	// RetryDelay is how long a failed row waits before the sweeper may
	// pick it up.
	RetryDelay time.Duration
}

// Outcome of one job.
type Outcome struct {
	Topic string
	// Sent is true when the message reached the queue.
	Sent bool
	// SendErr is the send error when Sent is false.
	SendErr error
	// MarkErr is set when recording the outcome failed; the row then keeps
	// its lease and the sweeper finds it once the lease expires, so the
	// event is not lost (at worst re-sent once). A mark run Later is not
	// known here: its failure is logged.
	MarkErr error
}

// Dispatch sends every job in parallel, then records each result. It never
// returns an error: per-topic results are in the outcomes, in job order.
func (d *Dispatcher) Dispatch(ctx context.Context, jobs []Job) []Outcome {
	out := make([]Outcome, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() { out[i] = d.one(ctx, j) })
	}
	wg.Wait()
	return out
}

func (d *Dispatcher) one(ctx context.Context, j Job) Outcome {
	m := j.Message
	o := Outcome{Topic: m.Topic}
	sendErr := d.Sender.Send(ctx, m)
	now := d.Now()
	if sendErr == nil {
		o.Sent = true
		mark := func(ctx context.Context) error {
			err := d.Store.MarkEnqueued(ctx, m.Row(), j.Owner, now)
			if err != nil && !errors.Is(err, ErrLeaseLost) {
				d.log().WarnContext(ctx, "outbox: sent but could not mark enqueued; the sweeper will re-send after the lease",
					"eventId", m.EventID, "tenantId", m.TenantID, "topic", m.Topic, "error", err)
				return err
			}
			return nil
		}
		if d.Later != nil {
			d.Later(ctx, func(ctx context.Context) { _ = mark(ctx) })
			return o
		}
		o.MarkErr = mark(ctx)
		return o
	}
	d.failed(ctx, j, sendErr, now, &o)
	return o
}

// failed records a failed send of j in o and on its row.
func (d *Dispatcher) failed(ctx context.Context, j Job, sendErr error, now time.Time, o *Outcome) {
	m := j.Message
	o.SendErr = sendErr
	err := d.Store.MarkFailed(ctx, Failure{
		Row: m.Row(), EventID: m.EventID, Owner: j.Owner,
		Attempts: j.Attempts + 1, Err: truncate.String(sendErr.Error(), MaxErrorLen),
		NextRetryAt: now.Add(j.RetryDelay), Now: now,
	})
	if err != nil && !errors.Is(err, ErrLeaseLost) {
		o.MarkErr = err
	}
	d.log().WarnContext(ctx, "outbox: send failed",
		"eventId", m.EventID, "tenantId", m.TenantID, "topic", m.Topic, "attempt", j.Attempts+1, "error", sendErr)
}

// BatchSender is a Sender that also sends several messages in few
// requests (SQS's SendMessageBatch). SendBatch returns one error per
// message, in order (nil: sent). It keeps the order of a topic's messages
// (a FIFO group's sequence): after a failed message, the rest of its
// topic's messages are not sent either.
type BatchSender interface {
	Sender
	SendBatch(ctx context.Context, ms []Message) []error
}

// BatchMarker is a Store that also records several successful sends at
// once. MarkEnqueuedBatch returns one error per row, in order, each as
// MarkEnqueued would (ErrLeaseLost when the row moved on meanwhile).
type BatchMarker interface {
	Store
	MarkEnqueuedBatch(ctx context.Context, rs []Enqueued) []error
}

// Enqueued is one successful send to record.
type Enqueued struct {
	Row   RowRef
	Owner string
	Now   time.Time
}

// DispatchBatch is Dispatch for many jobs at once: the messages go out
// through the Sender's SendBatch and the successes are recorded in one
// receipt per lease owner when the Store keeps Receipts (and the owner is
// a BatchOwner that sent at least minReceiptRows), otherwise through the Store's
// MarkEnqueuedBatch when it has it (one at a time in parallel otherwise);
// failures are recorded one by one, as Dispatch does. Outcomes are in job
// order.
func (d *Dispatcher) DispatchBatch(ctx context.Context, jobs []Job) []Outcome {
	out := make([]Outcome, len(jobs))
	if len(jobs) == 0 {
		return out
	}
	bs, ok := d.Sender.(BatchSender)
	if !ok {
		return d.Dispatch(ctx, jobs)
	}
	ms := make([]Message, len(jobs))
	for i, j := range jobs {
		ms[i] = j.Message
	}
	sendErrs := bs.SendBatch(ctx, ms)
	now := d.Now()
	var (
		sent []int
		wg   sync.WaitGroup
	)
	for i, j := range jobs {
		out[i].Topic = j.Message.Topic
		if sendErrs[i] == nil {
			out[i].Sent = true
			sent = append(sent, i)
			continue
		}
		wg.Go(func() { d.failed(ctx, j, sendErrs[i], now, &out[i]) })
	}
	sent = d.receipt(ctx, jobs, sent, now)
	marks := make([]error, len(sent))
	if bm, ok := d.Store.(BatchMarker); ok && len(sent) > 0 {
		rs := make([]Enqueued, len(sent))
		for k, i := range sent {
			rs[k] = Enqueued{Row: jobs[i].Message.Row(), Owner: jobs[i].Owner, Now: now}
		}
		marks = bm.MarkEnqueuedBatch(ctx, rs)
	} else {
		for k, i := range sent {
			wg.Go(func() { marks[k] = d.Store.MarkEnqueued(ctx, jobs[i].Message.Row(), jobs[i].Owner, now) })
		}
	}
	wg.Wait()
	for k, i := range sent {
		if err := marks[k]; err != nil && !errors.Is(err, ErrLeaseLost) {
			m := jobs[i].Message
			out[i].MarkErr = err
			d.log().WarnContext(ctx, "outbox: sent but could not mark enqueued; the sweeper will re-send after the lease",
				"eventId", m.EventID, "tenantId", m.TenantID, "topic", m.Topic, "error", err)
		}
	}
	return out
}

// receipt records the sends of jobs at indexes sent in one receipt per
// lease owner (Receipts) and returns the indexes still to mark: all of
// them when the store keeps no receipts, an owner's few sends, and the
// sends of a receipt that could not be written (their marks record them).
func (d *Dispatcher) receipt(ctx context.Context, jobs []Job, sent []int, now time.Time) []int {
	rs, ok := d.Store.(Receipts)
	if !ok {
		return sent
	}
	byOwner := map[string][]int{}
	var owners []string
	for _, i := range sent {
		o := jobs[i].Owner
		if _, seen := byOwner[o]; !seen {
			owners = append(owners, o)
		}
		byOwner[o] = append(byOwner[o], i)
	}
	var mark []int
	for _, o := range owners {
		idx := byOwner[o]
		if len(idx) < minReceiptRows || !IsBatchOwner(o) {
			mark = append(mark, idx...)
			continue
		}
		rows := make([]RowRef, len(idx))
		for k, i := range idx {
			rows[k] = jobs[i].Message.Row()
		}
		if err := rs.RecordSent(ctx, Receipt{Owner: o, Rows: rows, Now: now}); err != nil {
			d.log().WarnContext(ctx, "outbox: could not record the batch's receipt; marking its rows enqueued one by one", "rows", len(rows), "error", err)
			mark = append(mark, idx...)
		}
	}
	slices.Sort(mark)
	return mark
}

func (d *Dispatcher) log() *slog.Logger {
	return logging.OrDiscard(d.Log)
}

// MaxErrorLen bounds lastError so a verbose SDK error cannot bloat the item.
const MaxErrorLen = 1024
