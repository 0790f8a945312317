package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// The erasure marker guards every write that copies an event's data
// (docs/architecture.md §5, guarantee 12): a subject erasure sets erasedAt
// on the event's ledger item and dispatch rows (Erasure.EraseEvent) before
// it erases the event's copies, so a copying write that checks the marker
// in its own conditional write either commits before the erasure marked
// the event (and the erasure then finds and erases the copy) or is refused
// (outbox.ErrErased). A write that updates the dispatch row anyway adds
// notErased to its condition (free: Recovery.Abandon); a write to another
// item puts Unerased in its transaction (a ConditionCheck on the row,
// which is small: 2 write units on AWS, only on the writes that make a
// copy, never on the delivery path). A new store holding an event's data
// (a per-attempt delivery record, …) does the same, and the erasure must
// reach where it keeps it.

// notErased is the condition of a write to a dispatch row (or ledger
// item) that copies the event's data: the row carries no erasure marker.
const notErased = "attribute_not_exists(erasedAt)"

// Unerased is the condition check that guards a write copying an event's
// data into another item: the dispatch row carries no erasure marker. A
// row that does not exist (its event expired, or a dead letter that names
// no event) passes: there is no marker to honour, and the erasure finds
// such copies through the subject indexes.
func (e *Events) Unerased(r outbox.RowRef) ddbtypes.TransactWriteItem {
	return ddbtypes.TransactWriteItem{ConditionCheck: &ddbtypes.ConditionCheck{
		TableName:           aws.String(e.Table),
		Key:                 rowKey(r),
		ConditionExpression: aws.String(notErased),
	}}
}

// erased reports whether a dispatch row carries the erasure marker (a
// strongly consistent read): it tells a write refused by notErased from
// one refused for its own condition, off the happy path.
func (e *Events) erased(ctx context.Context, r outbox.RowRef) (bool, error) {
	row, ok, err := e.Row(ctx, r)
	if err != nil {
		return false, fmt.Errorf("dynamo: read %s after a refused write: %w", r, err)
	}
	return ok && !row.ErasedAt.IsZero(), nil
}

// ledgerErased reports whether an event's ledger item carries the erasure
// marker (a strongly consistent read, off the happy path).
func (e *Events) ledgerErased(ctx context.Context, key string) (bool, error) {
	out, err := e.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:            aws.String(e.Table),
		Key:                  map[string]ddbtypes.AttributeValue{table.AttrPK: str(EventPK(key)), table.AttrSK: str(ledgerSK)},
		ConsistentRead:       aws.Bool(true),
		ProjectionExpression: aws.String("erasedAt"),
	})
	if err != nil {
		return false, fmt.Errorf("dynamo: read ledger %s after a refused write: %w", key, err)
	}
	_, ok := out.Item["erasedAt"]
	return ok, nil
}
