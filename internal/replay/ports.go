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
	// Restore recreates an event's missing row (enqueued) and, unless
	// ledgerExists, its ledger record, together.
	Restore(ctx context.Context, rec ledger.Record, row outbox.Row, ledgerExists bool) error
}

// JobRestarter restarts a failed durable job from its last checkpoint
// (the job engine), for incidents on a "jobs.<kind>" topic.
type JobRestarter interface {
	RestartJob(ctx context.Context, jobID, note string) error
}
