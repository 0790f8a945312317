package replay

import (
	"context"
	"time"

	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// Events is the Events table as replay and the operator views use it.
type Events interface {
	// Load returns an event's ledger record and outbox rows by key (an
	// error wrapping ledger.ErrNotFound for an unknown event).
	Load(ctx context.Context, key string) (ledger.Record, []outbox.Row, error)
	// Row reads one dispatch row; false when it does not exist.
	Row(ctx context.Context, r outbox.RowRef) (outbox.Row, bool, error)
	// ResetForReplay puts the row back to enqueued, conditional on it still
	// being as seen.
	ResetForReplay(ctx context.Context, seen outbox.Row, now time.Time) error
}

// Restorer recreates what a replay needs of an event past its retention,
// from the incident's body: a copy of the event's data, so the write is
// guarded by the subject erasure (docs/architecture.md §5, guarantee 13).
type Restorer interface {
	// Restore recreates an event's missing row (enqueued) and, unless
	// ledgerExists, its ledger record, together, only while the incident
	// incidentID is not erased and the ledger item carries no erasure
	// marker (outbox.ErrErased, and nothing is written);
	// outbox.ErrRowChanged when the row exists already.
	Restore(ctx context.Context, rec ledger.Record, row outbox.Row, ledgerExists bool, incidentID string) error
}

// JobRestarter restarts a failed durable job from its last checkpoint
// (the job engine), for incidents on a "jobs.<kind>" topic.
type JobRestarter interface {
	RestartJob(ctx context.Context, jobID, note string) error
}
