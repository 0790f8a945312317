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
	// CommitBatch writes the events of ps (their records, rows and legacy
	// checks) in one transaction, which must fit one (MaxBatchItems
	// items). errs has one entry per event: a *ledger.ExistsError when it
	// is stored already (it is left out and the others are committed
	// together without it), another error when it cannot be committed
	// (for example an outbox row without its ledger item), nil when it was
	// committed. A non-nil err means none of them was committed.
	CommitBatch(ctx context.Context, ps []CommitParams) (errs []error, err error)
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

// The most one commit of a batch writes: DynamoDB's TransactWriteItems
// takes 100 items and 4 MB (a payload near the claim-check threshold is
// up to 256 KiB, so the bytes bound the batch before the items do).
const (
	MaxBatchItems = 100
	MaxBatchBytes = 3 << 20
)

// Bytes is about how many bytes p's commit writes: the payload (inline
// unless claim-checked) and a generous allowance per item for the rest.
func (p CommitParams) Bytes() int {
	return len(p.Record.Event.Payload) + 2048*p.Items()
}

// Items is how many items p's commit writes (its record, its rows and
// its legacy check).
func (p CommitParams) Items() int {
	n := 1 + len(p.Rows)
	if p.LegacyKey != "" {
		n++
	}
	return n
}
