package dynamo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/outbox"
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

// Commit writes the ledger item (conditional on the key being new) and one
// outbox row per topic in a single TransactWriteItems; with p.LegacyKey it
// also checks the event is not stored under its legacy key (for the same
// tenant). A cancellation is classified by its reasons: a
// ConditionalCheckFailed on the ledger Put or the legacy check is a
// duplicate (*ledger.ExistsError naming the key that exists);
// TransactionConflict and throttling are retried with full-jitter backoff;
// anything else is returned.
func (e *Events) Commit(ctx context.Context, p ingest.CommitParams) error {
	rec := p.Record
	items, legacyAt, err := e.commitItems(p)
	if err != nil {
		return err
	}
	in := &dynamodb.TransactWriteItemsInput{TransactItems: items}
	if len(p.Rows) > 0 {
		// Makes an SDK-level retry of a commit whose response was lost
		// succeed instead of looking like a duplicate. DynamoDB remembers a
		// token for 10 minutes and refuses it with other parameters
		// (IdempotentParameterMismatch) account-wide, across tables, so it
		// is the table, the publish's owner and the event's key together:
		// one token per commit, whatever owner names a caller uses.
		sum := sha256.Sum256([]byte(e.Table + "|" + p.Rows[0].LeaseOwner + "|" + rec.Key))
		in.ClientRequestToken = aws.String(hex.EncodeToString(sum[:16]))
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
		class, at := classify(err)
		switch {
		case class == txConditionFailed && at == 0:
			return &ledger.ExistsError{Key: rec.Key}
		case class == txConditionFailed && at == legacyAt:
			return &ledger.ExistsError{Key: p.LegacyKey}
		case class == txConditionFailed:
			return fmt.Errorf("dynamo: commit %s: an outbox row exists without its ledger item (written before rows were tied to their ledger item); delete it to accept the event: %w", rec.Key, err)
		case class == txRetry:
			if attempt >= attempts {
				return fmt.Errorf("dynamo: commit %s: gave up after %d attempts: %w", rec.Key, attempt, err)
			}
			e.log().WarnContext(ctx, "dynamo: commit cancelled, retrying", "eventKey", rec.Key, "attempt", attempt, "error", err)
			if err := clock.Sleep(ctx, e.backoff(attempt)); err != nil {
				return err
			}
		default:
			return fmt.Errorf("dynamo: commit %s: %w", rec.Key, err)
		}
	}
}

// commitItems are p's transaction items: the ledger Put first, then one
// Put per outbox row, then (legacyAt, else -1) the legacy key's check.
func (e *Events) commitItems(p ingest.CommitParams) (items []ddbtypes.TransactWriteItem, legacyAt int, err error) {
	rec := p.Record
	items = make([]ddbtypes.TransactWriteItem, 0, p.Items())
	led, err := attributevalue.MarshalMap(toLedgerItem(rec))
	if err != nil {
		return nil, -1, fmt.Errorf("dynamo: marshal ledger %s: %w", rec.Key, err)
	}
	items = append(items, putNew(e.Table, led))
	for _, r := range p.Rows {
		av, err := attributevalue.MarshalMap(toRowItem(r, rec.ExpiresAt))
		if err != nil {
			return nil, -1, fmt.Errorf("dynamo: marshal row %s: %w", r.Ref(), err)
		}
		items = append(items, putNew(e.Table, av))
	}
	legacyAt = -1
	if p.LegacyKey != "" {
		legacyAt = len(items)
		items = append(items, ddbtypes.TransactWriteItem{ConditionCheck: &ddbtypes.ConditionCheck{
			TableName: aws.String(e.Table),
			Key: map[string]ddbtypes.AttributeValue{
				table.AttrPK: str(EventPK(p.LegacyKey)), table.AttrSK: str(ledgerSK),
			},
			ConditionExpression:       aws.String("attribute_not_exists(pk) OR tenantId <> :t"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":t": str(rec.Event.TenantID)},
		}})
	}
	return items, legacyAt, nil
}

type txClass int

const (
	txFatal txClass = iota
	// txConditionFailed: an item's condition failed (at is its index).
	txConditionFailed
	txRetry
)

// classify reads a TransactWriteItems error. Reasons are positional: at is
// the index of the item whose condition failed. (ReturnValuesOnCondition-
// CheckFailure is not used: one of the local emulators does not support
// it, and the callers load what they need anyway.)
func classify(err error) (class txClass, at int) {
	var tce *ddbtypes.TransactionCanceledException
	if errors.As(err, &tce) {
		retry := false
		for i, r := range tce.CancellationReasons {
			switch aws.ToString(r.Code) {
			case "ConditionalCheckFailed":
				return txConditionFailed, i
			case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
				retry = true
			}
		}
		if retry {
			return txRetry, -1
		}
		return txFatal, -1
	}
	if retryable(err) {
		return txRetry, -1
	}
	return txFatal, -1
}

// retryable reports a throttled or conflicting request.
func retryable(err error) bool {
	var inProgress *ddbtypes.TransactionInProgressException
	var throttled *ddbtypes.ProvisionedThroughputExceededException
	var limit *ddbtypes.RequestLimitExceeded
	return errors.As(err, &inProgress) || errors.As(err, &throttled) || errors.As(err, &limit)
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

// Record reads an event's ledger item alone (strongly consistent): the
// whole event, payload and claim-check reference included, which the
// tenant index does not project.
func (e *Events) Record(ctx context.Context, key string) (ledger.Record, error) {
	out, err := e.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(e.Table),
		Key:            map[string]ddbtypes.AttributeValue{table.AttrPK: str(EventPK(key)), table.AttrSK: str(ledgerSK)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return ledger.Record{}, fmt.Errorf("dynamo: read %s: %w", key, err)
	}
	if out.Item == nil {
		return ledger.Record{}, fmt.Errorf("dynamo: read %s: %w", key, ledger.ErrNotFound)
	}
	var it ledgerItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return ledger.Record{}, fmt.Errorf("dynamo: decode ledger %s: %w", key, err)
	}
	return it.record(), nil
}

// Load reads an event's whole item collection (ledger item and outbox rows)
// with one strongly consistent Query, and the receipt of a row pending
// under a batch dispatch's lease (outbox.Receipts), if there is one.
func (e *Events) Load(ctx context.Context, eventID string) (ledger.Record, []outbox.Row, error) {
	var (
		rec   ledger.Record
		found bool
		rows  []outbox.Row
	)
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(e.Table),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": str(EventPK(eventID))},
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
		return rec, nil, fmt.Errorf("dynamo: load %s: %w", eventID, ledger.ErrNotFound)
	}
	if err := e.readReceipts(ctx, rows); err != nil {
		return rec, nil, fmt.Errorf("dynamo: load %s: %w", eventID, err)
	}
	return rec, rows, nil
}

func rowKey(r outbox.RowRef) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{
		table.AttrPK: str(EventPK(r.Key)),
		table.AttrSK: str(DispatchSK(r.Topic)),
	}
}

func (e *Events) log() *slog.Logger {
	return logging.OrDiscard(e.Log)
}
