package dynamo

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

var _ outbox.Receipts = (*Events)(nil)

const (
	// A receipt is an item of its own collection ("SENT#<owner>"), in no
	// index: it has none of their keys.
	receiptPrefix = "SENT#"
	receiptSK     = "RECEIPT"
	// receiptTTL: a receipt matters while a row it names is still pending
	// under its owner's lease, until the sweeper's first look after the
	// lease ends (minutes) or the consumer's claim. A week outlasts a
	// sweeper stopped for days; a row whose receipt expired before anyone
	// looked is sent again, and the consumer drops the copy.
	receiptTTL = 7 * 24 * time.Hour
	// maxReceiptBytes keeps a receipt well inside DynamoDB's 400 KB item:
	// a larger batch is marked row by row instead.
	maxReceiptBytes = 300 << 10
)

type receiptItem struct {
	PK        string   `dynamodbav:"pk"`
	SK        string   `dynamodbav:"sk"`
	Rows      []string `dynamodbav:"rows,stringset"`
	SentAt    string   `dynamodbav:"sentAt"`
	ExpiresAt int64    `dynamodbav:"expiresAt"`
}

// receiptName is a row as its receipt names it. A topic has no space
// (topology names), so the name is the row's alone.
func receiptName(r outbox.RowRef) string { return r.Topic + " " + r.Key }

func receiptKey(owner string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{table.AttrPK: str(receiptPrefix + owner), table.AttrSK: str(receiptSK)}
}

// RecordSent writes the receipt of r.Owner naming r.Rows: one PutItem for
// a batch's sends, billed by its size (about 30 rows a write unit) where
// marks cost a unit a row. The rows stay as they are: pending under the
// owner's lease, which is how a reader knows to look for the receipt.
func (e *Events) RecordSent(ctx context.Context, r outbox.Receipt) error {
	names := make([]string, 0, len(r.Rows))
	size := 0
	for _, row := range r.Rows {
		n := receiptName(row)
		names = append(names, n)
		size += len(n)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if size > maxReceiptBytes {
		return fmt.Errorf("dynamo: receipt of %s: %d rows (%d bytes) do not fit one item", r.Owner, len(names), size)
	}
	item, err := attributevalue.MarshalMap(receiptItem{
		PK: receiptPrefix + r.Owner, SK: receiptSK, Rows: names,
		SentAt: FormatTime(r.Now), ExpiresAt: r.Now.Add(receiptTTL).Unix(),
	})
	if err != nil {
		return fmt.Errorf("dynamo: encode receipt of %s: %w", r.Owner, err)
	}
	if _, err := e.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(e.Table), Item: item}); err != nil {
		return fmt.Errorf("dynamo: put receipt of %s: %w", r.Owner, err)
	}
	return nil
}

// receiptOwners are the lease owners of rows that may be receipted: pending
// and held by a batch dispatch (a mark clears the owner; a failed send
// leaves status failed; no other owner writes receipts, so a stranded
// single publish costs no read).
func receiptOwners(rows []outbox.Row) []string {
	var owners []string
	for _, r := range rows {
		if r.Status == outbox.StatusPending && outbox.IsBatchOwner(r.LeaseOwner) && !slices.Contains(owners, r.LeaseOwner) {
			owners = append(owners, r.LeaseOwner)
		}
	}
	return owners
}

// applyReceipts reads the rows their owner's receipt names as enqueued
// (outbox.Row.Receipted), as a mark would have left them: not leased. The
// owner stays as stored, for the conditions of the write that records it.
func applyReceipts(rows []outbox.Row, sent map[string]map[string]bool) {
	for i, r := range rows {
		if r.Status == outbox.StatusPending && outbox.IsBatchOwner(r.LeaseOwner) && sent[r.LeaseOwner][receiptName(r.Ref())] {
			rows[i].Status, rows[i].Receipted, rows[i].LeaseUntil = outbox.StatusEnqueued, true, time.Time{}
		}
	}
}

// recordSent is the assignments (for a SET) that record a row read from
// its receipt as enqueued, as MarkEnqueued records a send: status
// enqueued, lease released. It adds the values they use to values.
func recordSent(values map[string]ddbtypes.AttributeValue) string {
	values[":enq"], values[":empty"], values[":zero"] = str(string(outbox.StatusEnqueued)), str(""), num(0)
	return "#s = :enq, leaseOwner = :empty, leaseUntil = :zero"
}

// storedStatus is the status a row read as r is stored with.
func storedStatus(r outbox.Row) outbox.Status {
	if r.Receipted {
		return outbox.StatusPending
	}
	return r.Status
}

// readReceipts applies the receipts of rows read by one event (Load, Row):
// a strongly consistent GetItem per owner, nearly always none or one.
func (e *Events) readReceipts(ctx context.Context, rows []outbox.Row) error {
	owners := receiptOwners(rows)
	if len(owners) == 0 {
		return nil
	}
	sent := map[string]map[string]bool{}
	for _, o := range owners {
		out, err := e.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(e.Table), Key: receiptKey(o), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return fmt.Errorf("dynamo: get receipt of %s: %w", o, err)
		}
		if sent[o], err = decodeReceipt(out.Item); err != nil {
			return fmt.Errorf("dynamo: decode receipt of %s: %w", o, err)
		}
	}
	applyReceipts(rows, sent)
	return nil
}

// readReceiptsBatch applies the receipts of a page of due rows: strongly
// consistent BatchGetItem, 100 owners a call, unprocessed keys retried.
func (e *Events) readReceiptsBatch(ctx context.Context, rows []outbox.Row) error {
	var keys []map[string]ddbtypes.AttributeValue
	for _, o := range receiptOwners(rows) {
		keys = append(keys, receiptKey(o))
	}
	sent := map[string]map[string]bool{}
	err := e.batchGet(ctx, keys, func(item map[string]ddbtypes.AttributeValue) error {
		names, err := decodeReceipt(item)
		if err != nil {
			return fmt.Errorf("dynamo: decode receipt: %w", err)
		}
		sent[sattr(item, table.AttrPK)[len(receiptPrefix):]] = names
		return nil
	})
	if err != nil {
		return fmt.Errorf("dynamo: batch get receipts: %w", err)
	}
	applyReceipts(rows, sent)
	return nil
}

func decodeReceipt(item map[string]ddbtypes.AttributeValue) (map[string]bool, error) {
	if len(item) == 0 {
		return nil, nil
	}
	var it receiptItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return nil, err
	}
	names := make(map[string]bool, len(it.Rows))
	for _, n := range it.Rows {
		names[n] = true
	}
	return names, nil
}
