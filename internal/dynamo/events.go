package dynamo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/table"
)

// Events is the Events table adapter.
type Events struct {
	Client *dynamodb.Client
	Table  string
	Log    *slog.Logger
	// CommitAttempts bounds retries of a commit cancelled by a transaction
	// conflict or throttling (default 6).
	CommitAttempts int
	// Backoff is the base of the jittered commit backoff (default 25 ms).
	Backoff time.Duration
}

var (
	_ ingest.Ledger = (*Events)(nil)
	_ outbox.Store  = (*Events)(nil)
)

// Commit writes the ledger item (conditional on the id being new) and one
// outbox row per topic in a single TransactWriteItems. A cancellation is
// classified by its reasons: the ledger Put's ConditionalCheckFailed is a
// duplicate (ingest.ErrExists); TransactionConflict and throttling are retried
// with full-jitter backoff; anything else is returned.
func (e *Events) Commit(ctx context.Context, rec ledger.Record, rows []outbox.Row) error {
	items := make([]ddbtypes.TransactWriteItem, 0, len(rows)+1)
	led, err := attributevalue.MarshalMap(toLedgerItem(rec))
	if err != nil {
		return fmt.Errorf("dynamo: marshal ledger %s: %w", rec.Event.ID, err)
	}
	items = append(items, putNew(e.Table, led))
	for _, r := range rows {
		av, err := attributevalue.MarshalMap(toRowItem(r, rec.ExpiresAt))
		if err != nil {
			return fmt.Errorf("dynamo: marshal row %s/%s: %w", r.EventID, r.Topic, err)
		}
		items = append(items, putNew(e.Table, av))
	}
	in := &dynamodb.TransactWriteItemsInput{TransactItems: items}
	if len(rows) > 0 {
		// Makes an SDK-level retry of a commit whose response was lost
		// succeed instead of looking like a duplicate.
		in.ClientRequestToken = aws.String(rows[0].LeaseOwner)
	}

	attempts := e.CommitAttempts
	if attempts <= 0 {
		attempts = 6
	}
	for attempt := 1; ; attempt++ {
		_, err := e.Client.TransactWriteItems(ctx, in)
		if err == nil {
			return nil
		}
		switch classify(err) {
		case txDuplicate:
			return ingest.ErrExists
		case txRetry:
			if attempt >= attempts {
				return fmt.Errorf("dynamo: commit %s: gave up after %d attempts: %w", rec.Event.ID, attempt, err)
			}
			e.log().WarnContext(ctx, "dynamo: commit cancelled, retrying", "eventId", rec.Event.ID, "attempt", attempt, "error", err)
			if err := sleep(ctx, e.backoff(attempt)); err != nil {
				return err
			}
		default:
			return fmt.Errorf("dynamo: commit %s: %w", rec.Event.ID, err)
		}
	}
}

type txClass int

const (
	txFatal txClass = iota
	txDuplicate
	txRetry
)

// classify reads a TransactWriteItems error. Reasons are positional: index 0
// is the ledger Put, whose ConditionalCheckFailed means the id exists. (We do
// not use ReturnValuesOnConditionCheckFailure: the local emulator does not
// support it and the caller loads the collection anyway.)
func classify(err error) txClass {
	var tce *ddbtypes.TransactionCanceledException
	if errors.As(err, &tce) {
		retry := false
		for i, r := range tce.CancellationReasons {
			switch aws.ToString(r.Code) {
			case "ConditionalCheckFailed":
				if i == 0 {
					return txDuplicate
				}
				// A row existing without its ledger item cannot happen
				// through Commit; treat it as fatal and loud.
				return txFatal
			case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
				retry = true
			}
		}
		if retry {
			return txRetry
		}
		return txFatal
	}
	var inProgress *ddbtypes.TransactionInProgressException
	var throttled *ddbtypes.ProvisionedThroughputExceededException
	var limit *ddbtypes.RequestLimitExceeded
	if errors.As(err, &inProgress) || errors.As(err, &throttled) || errors.As(err, &limit) {
		return txRetry
	}
	return txFatal
}

func putNew(tableName string, item map[string]ddbtypes.AttributeValue) ddbtypes.TransactWriteItem {
	return ddbtypes.TransactWriteItem{Put: &ddbtypes.Put{
		TableName:           aws.String(tableName),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	}}
}

func (e *Events) backoff(attempt int) time.Duration {
	base := e.Backoff
	if base <= 0 {
		base = 25 * time.Millisecond
	}
	ceiling := min(base<<(attempt-1), time.Second)
	return time.Duration(rand.Int64N(int64(ceiling)) + 1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Load reads an event's whole item collection (ledger item and outbox rows)
// with one strongly consistent Query.
func (e *Events) Load(ctx context.Context, eventID string) (ledger.Record, []outbox.Row, error) {
	var (
		rec   ledger.Record
		found bool
		rows  []outbox.Row
	)
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(e.Table),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": &ddbtypes.AttributeValueMemberS{Value: EventPK(eventID)}},
		ConsistentRead:            aws.Bool(true),
	}
	p := dynamodb.NewQueryPaginator(e.Client, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return rec, nil, fmt.Errorf("dynamo: load %s: %w", eventID, err)
		}
		for _, item := range page.Items {
			sk, _ := item["sk"].(*ddbtypes.AttributeValueMemberS)
			switch {
			case sk == nil:
				continue
			case sk.Value == ledgerSK:
				var it ledgerItem
				if err := attributevalue.UnmarshalMap(item, &it); err != nil {
					return rec, nil, fmt.Errorf("dynamo: decode ledger %s: %w", eventID, err)
				}
				rec, found = it.record(), true
			case strings.HasPrefix(sk.Value, dispatchPrefix):
				var it rowItem
				if err := attributevalue.UnmarshalMap(item, &it); err != nil {
					return rec, nil, fmt.Errorf("dynamo: decode row %s %s: %w", eventID, sk.Value, err)
				}
				rows = append(rows, it.row())
			}
		}
	}
	if !found {
		return rec, nil, fmt.Errorf("dynamo: load %s: %w", eventID, ingest.ErrNotFound)
	}
	return rec, rows, nil
}

func rowKey(eventID, topic string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{
		table.AttrPK: &ddbtypes.AttributeValueMemberS{Value: EventPK(eventID)},
		table.AttrSK: &ddbtypes.AttributeValueMemberS{Value: DispatchSK(topic)},
	}
}

func (e *Events) log() *slog.Logger {
	if e.Log != nil {
		return e.Log
	}
	return slog.Default()
}
