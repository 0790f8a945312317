package sweep

import (
	"context"
	"time"

	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// Rows is the Events table as the sweeper uses it.
type Rows interface {
	// DuePage returns up to limit rows of one sweeper index partition due
	// at now, oldest first, after cursor; the next cursor is "" once the
	// partition is exhausted.
	DuePage(ctx context.Context, status outbox.Status, shard int, now time.Time, limit int, cursor string) ([]outbox.Row, string, error)
	// ClaimDue leases a row that is still as seen and still due; false
	// when another sender holds it or it moved on.
	ClaimDue(ctx context.Context, seen outbox.Row, owner string, now time.Time, lease time.Duration) (bool, error)
	// Ledgers reads the ledger items of several events; missing ones are
	// absent from the map.
	Ledgers(ctx context.Context, eventIDs []string) (map[string]ledger.Record, error)
	// MarkEnqueued and MarkFailed record send outcomes by the lease owner.
	MarkEnqueued(ctx context.Context, eventID, topic, owner string, now time.Time) error
	MarkFailed(ctx context.Context, f outbox.Failure) error
}

// Abandoner records an exhausted dispatch: the row's dlq_abandoned status
// and its incident in one transaction (outbox.ErrLeaseLost if the row
// moved on).
type Abandoner interface {
	Abandon(ctx context.Context, f outbox.Failure, dl incident.DeadLetter) (incident.Incident, error)
}
