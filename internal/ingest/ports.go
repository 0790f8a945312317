package ingest

import (
	"context"
	"errors"

	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// Ledger stores events and their outbox rows.
type Ledger interface {
	// Commit writes the record and its outbox rows in one transaction. It
	// returns ErrExists when the event id is already stored.
	Commit(ctx context.Context, rec ledger.Record, rows []outbox.Row) error
	// Load returns a stored record and its outbox rows (ErrNotFound if none).
	Load(ctx context.Context, eventID string) (ledger.Record, []outbox.Row, error)
}

var (
	// ErrExists: the event id is already in the ledger.
	ErrExists = errors.New("ingest: event id already stored")
	// ErrNotFound: no ledger record for the event id.
	ErrNotFound = errors.New("ingest: event not found")
)
