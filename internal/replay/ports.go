package replay

import (
	"context"
	"time"

	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// Events is the Events table as replay and the operator views use it.
type Events interface {
	// Load returns an event's ledger record and outbox rows (an error
	// wrapping ingest.ErrNotFound for an unknown event).
	Load(ctx context.Context, eventID string) (ledger.Record, []outbox.Row, error)
	// Row reads one dispatch row; false when it does not exist.
	Row(ctx context.Context, eventID, topic string) (outbox.Row, bool, error)
	// ResetForReplay puts the row back to enqueued, conditional on it still
	// being as seen (recreating it if it no longer exists).
	ResetForReplay(ctx context.Context, seen outbox.Row, exists bool, now time.Time, retention time.Duration) error
	// ListTenant pages a tenant's events, newest first.
	ListTenant(ctx context.Context, tenantID string, since, until time.Time, limit int, cursor string) ([]ledger.Record, string, error)
}
