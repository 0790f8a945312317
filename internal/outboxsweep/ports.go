package outboxsweep

import (
	"context"
	"time"

	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// Rows is the Events table as the sweeper uses it.
type Rows interface {
	// Shards is how many sweeper index partitions each status is written
	// across (DueParams.Shard is 0..Shards()-1); the sweeper reads them
	// all.
	Shards() int
	// DuePage returns up to p.Limit rows of one sweeper index partition
	// due at p.Now, oldest first, after p.Cursor; the next cursor is ""
	// once the partition is exhausted.
	DuePage(ctx context.Context, p DueParams) (DuePage, error)
	// Reschedule moves a due row the sweeper has nothing to send for,
	// conditional on the row still being as seen (status, lease owner,
	// updatedAt); false when it moved on. A zero r.At takes it out of the
	// due index (an enqueued row: its message is on its queue, and the
	// consumer's claim puts the row back), otherwise the sweeper looks at
	// it again at r.At (a processing row, once its lease may be settled).
	Reschedule(ctx context.Context, r Reschedule) (bool, error)
	// ClaimDue leases a row that is still as seen and still due; false
	// when another sender holds it or it moved on.
	ClaimDue(ctx context.Context, c DueClaim) (bool, error)
	// Ledgers reads the ledger items of several events by key; missing
	// ones are absent from the map.
	Ledgers(ctx context.Context, keys []string) (map[string]ledger.Record, error)
	// MarkEnqueued and MarkFailed record send outcomes by the lease owner.
	MarkEnqueued(ctx context.Context, r outbox.RowRef, owner string, now time.Time) error
	MarkFailed(ctx context.Context, f outbox.Failure) error
	// Settle moves a processing row whose consumer lease ended long ago
	// (its message is gone) to its outcome, conditional on the row still
	// being as seen; false when it moved on.
	Settle(ctx context.Context, p Settlement) (bool, error)
}

// DueParams select one page of one sweeper index partition.
type DueParams struct {
	// Status is empty for the due index, which holds rows of every status
	// from their creation to their outcome. A status selects its partition
	// of the legacy index (rows written before the due index, by status),
	// which the sweeper reads until it is empty.
	Status outbox.Status
	Shard  int
	// Now: rows whose nextRetryAt is at or before it are due.
	Now    time.Time
	Limit  int
	Cursor string
}

// DuePage is one page of due rows.
type DuePage struct {
	Rows []outbox.Row
	// Cursor continues the partition; "" once it is exhausted.
	Cursor string
}

// Reschedule moves a due row without sending it.
type Reschedule struct {
	Seen outbox.Row
	// At is when the sweeper looks at the row next; zero: never (it leaves
	// the due index).
	At time.Time
	// Now is when: a row read as enqueued from its dispatch receipt
	// (outbox.Row.Receipted) is recorded enqueued then.
	Now time.Time
}

// DueClaim asks for the lease of a row found due.
type DueClaim struct {
	Seen  outbox.Row
	Owner string
	Now   time.Time
	Lease time.Duration
}

// Settlement is the outcome the sweeper records for a processing row whose
// message is gone: completed (the consumer acknowledges a message only
// after its side effect, or after moving it to the DLQ) or dlq.
type Settlement struct {
	Seen   outbox.Row
	Status outbox.Status
	Note   string
	Now    time.Time
}

// Abandoner records an exhausted dispatch: the row's dlq_abandoned status
// and its incident in one transaction (outbox.ErrLeaseLost if the row
// moved on).
type Abandoner interface {
	Abandon(ctx context.Context, f outbox.Failure, dl incident.DeadLetter) (incident.Incident, error)
}
