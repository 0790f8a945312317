package ingest

import (
	"context"

	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// Ledger stores events and their outbox rows.
type Ledger interface {
	// Commit writes the record and its outbox rows in one transaction. It
	// returns a *ledger.ExistsError (errors.Is ledger.ErrExists) when the
	// event is stored already: under the record's key, or under
	// p.LegacyKey when that is set.
	Commit(ctx context.Context, p CommitParams) error
	// Load returns a stored record and its outbox rows (an error wrapping
	// ledger.ErrNotFound if none).
	Load(ctx context.Context, key string) (ledger.Record, []outbox.Row, error)
}

// CommitParams are one event's commit.
type CommitParams struct {
	Record ledger.Record
	Rows   []outbox.Row
	// LegacyKey, when set, must not exist either: an event stored before
	// ids were scoped by tenant is still the same event (see
	// ledger.LegacyKey). It costs a condition check, so it is only asked
	// for while such events can still be retried.
	LegacyKey string
}
