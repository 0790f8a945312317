package dynamo

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// duePage is one page of due rows from one sweeper index partition.
type duePage struct {
	Rows []outbox.Row
	// Next continues the same partition; nil when it is exhausted.
	Next map[string]ddbtypes.AttributeValue
}

// duePartition returns rows due at now from one sweeper index partition,
// oldest first: with a status, the legacy index's partition of that
// status and shard (rows written before the due index); without, the due
// index's partition of the shard (rows of any status, read from the table,
// since the index projects only keys).
func (e *Events) duePartition(ctx context.Context, status outbox.Status, shard int, now time.Time, limit int32, start map[string]ddbtypes.AttributeValue) (duePage, error) {
	index, part, pk := table.IndexDue, table.DuePartitionOf(shard), table.AttrDuePK
	if status != "" {
		index, part, pk = table.IndexSweep, fmt.Sprintf("%s#%d", status, shard), table.AttrSweepPK
	}
	out, err := e.Client.Query(ctx, &dynamodb.QueryInput{
		TableName:              aws.String(e.Table),
		IndexName:              aws.String(index),
		KeyConditionExpression: aws.String(pk + " = :p AND nextRetryAt <= :now"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":p":   str(part),
			":now": num(millis(now)),
		},
		ScanIndexForward:  aws.Bool(true),
		Limit:             aws.Int32(limit),
		ExclusiveStartKey: start,
	})
	if err != nil {
		return duePage{}, fmt.Errorf("dynamo: query due %s: %w", part, err)
	}
	page := duePage{Next: out.LastEvaluatedKey}
	items := out.Items
	if status == "" {
		if items, err = e.dueRows(ctx, items, now); err != nil {
			return duePage{}, fmt.Errorf("dynamo: read due rows of %s: %w", part, err)
		}
	}
	for _, item := range items {
		var it rowItem
		if err := attributevalue.UnmarshalMap(item, &it); err != nil {
			return duePage{}, fmt.Errorf("dynamo: decode due row: %w", err)
		}
		page.Rows = append(page.Rows, it.row())
	}
	if status == "" {
		// Rows of a batch dispatch whose consumer lags past the lease:
		// their receipt says they were sent (legacy rows predate receipts).
		if err := e.readReceiptsBatch(ctx, page.Rows); err != nil {
			return duePage{}, fmt.Errorf("dynamo: read due rows of %s: %w", part, err)
		}
	}
	return page, nil
}

// dueRows reads the rows a due index page names (strongly consistent
// BatchGetItem, unprocessed keys retried), in the page's order, leaving out
// the ones that left the index or stopped being due since.
func (e *Events) dueRows(ctx context.Context, keys []map[string]ddbtypes.AttributeValue, now time.Time) ([]map[string]ddbtypes.AttributeValue, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	byKey := map[string]map[string]ddbtypes.AttributeValue{}
	name := func(item map[string]ddbtypes.AttributeValue) string {
		return sattr(item, table.AttrPK) + "\x00" + sattr(item, table.AttrSK)
	}
	var pending []map[string]ddbtypes.AttributeValue
	for _, k := range keys {
		pending = append(pending, map[string]ddbtypes.AttributeValue{table.AttrPK: k[table.AttrPK], table.AttrSK: k[table.AttrSK]})
	}
	err := e.batchGet(ctx, pending, func(item map[string]ddbtypes.AttributeValue) error {
		byKey[name(item)] = item
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]map[string]ddbtypes.AttributeValue, 0, len(keys))
	for _, k := range keys {
		item, ok := byKey[name(k)]
		if !ok || sattr(item, table.AttrDuePK) == "" {
			continue
		}
		var at struct {
			NextRetryAt int64 `dynamodbav:"nextRetryAt"`
		}
		if attributevalue.UnmarshalMap(item, &at) != nil || at.NextRetryAt > millis(now) {
			continue
		}
		out = append(out, item)
	}
	return out, nil
}

// Due returns up to limit sendable rows (pending or failed) due at now across
// every shard of both indexes, oldest first. The index is eventually
// consistent on AWS, so callers still claim each row conditionally before
// sending.
func (e *Events) Due(ctx context.Context, now time.Time, limit int) ([]outbox.Row, error) {
	var rows []outbox.Row
	for _, status := range append([]outbox.Status{""}, outbox.Sendable...) {
		for shard := range table.SweepShards {
			var start map[string]ddbtypes.AttributeValue
			for {
				page, err := e.duePartition(ctx, status, shard, now, int32(limit), start)
				if err != nil {
					return nil, err
				}
				for _, r := range page.Rows {
					if slices.Contains(outbox.Sendable, r.Status) {
						rows = append(rows, r)
					}
				}
				if page.Next == nil || len(rows) >= limit {
					break
				}
				start = page.Next
			}
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].NextRetryAt.Before(rows[j].NextRetryAt) })
	if len(rows) > limit {
		rows = rows[:limit]
	}
	return rows, nil
}

// sattr is a string attribute of an item ("" when absent or not a string).
func sattr(item map[string]ddbtypes.AttributeValue, name string) string {
	if v, ok := item[name].(*ddbtypes.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}
