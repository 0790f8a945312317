package outbox

import (
	"context"
	"strings"
	"time"
)

// Receipts is a Store that can record a batch dispatch's successful sends
// in one receipt of the lease owner instead of marking each row enqueued:
// one write for a whole batch where marks cost one per row (on DynamoDB a
// write unit each, and on a bulk import the one write per record that is
// not the event itself or its consumer's). The rows stay pending under the
// owner's lease; the store reads a pending row its owner's receipt names
// as enqueued (Row.Receipted), so the sweeper, a duplicate's re-drive and
// the operator views see what they would have seen after a mark. A row
// whose send the receipt does not name (its send failed, or the receipt
// was never written) is sent again by the sweeper once the lease ends, as
// a row whose mark failed is.
type Receipts interface {
	Store
	// RecordSent writes the receipt of r.Owner naming r.Rows, whose
	// messages are on their queues.
	RecordSent(ctx context.Context, r Receipt) error
}

// Receipt names the rows a lease owner sent.
type Receipt struct {
	Owner string
	Rows  []RowRef
	Now   time.Time
}

// BatchOwner is the lease owner of a batch dispatch named id: only such
// an owner's sends are recorded in a receipt, so a reader looks for one
// only for rows it holds (IsBatchOwner).
func BatchOwner(id string) string { return batchOwnerPrefix + id }

// IsBatchOwner reports whether owner is a BatchOwner.
func IsBatchOwner(owner string) bool { return strings.HasPrefix(owner, batchOwnerPrefix) }

const batchOwnerPrefix = "batch-"

// minReceiptRows is the fewest sends of one owner a receipt records: below
// it the marks cost no more than the receipt, and a mark shows the row
// enqueued without the receipt's read.
const minReceiptRows = 2
