package dynamo

import (
	"context"
	"fmt"
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

// duePartition returns rows of one status and shard whose nextRetryAt is at
// or before now, oldest first, from the sweeper index.
func (e *Events) duePartition(ctx context.Context, status outbox.Status, shard int, now time.Time, limit int32, start map[string]ddbtypes.AttributeValue) (duePage, error) {
	out, err := e.Client.Query(ctx, &dynamodb.QueryInput{
		TableName:              aws.String(e.Table),
		IndexName:              aws.String(table.IndexSweep),
		KeyConditionExpression: aws.String("sweepPk = :p AND nextRetryAt <= :now"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":p":   str(fmt.Sprintf("%s#%d", status, shard)),
			":now": num(millis(now)),
		},
		ScanIndexForward:  aws.Bool(true),
		Limit:             aws.Int32(limit),
		ExclusiveStartKey: start,
	})
	if err != nil {
		return duePage{}, fmt.Errorf("dynamo: query due %s#%d: %w", status, shard, err)
	}
	page := duePage{Next: out.LastEvaluatedKey}
	for _, item := range out.Items {
		var it rowItem
		if err := attributevalue.UnmarshalMap(item, &it); err != nil {
			return duePage{}, fmt.Errorf("dynamo: decode due row: %w", err)
		}
		page.Rows = append(page.Rows, it.row())
	}
	return page, nil
}

// Due returns up to limit sendable rows (pending or failed) due at now across
// every shard, oldest first. The index is eventually consistent on AWS, so
// callers still claim each row conditionally before sending.
func (e *Events) Due(ctx context.Context, now time.Time, limit int) ([]outbox.Row, error) {
	var rows []outbox.Row
	for _, status := range outbox.Sendable {
		for shard := range table.SweepShards {
			var start map[string]ddbtypes.AttributeValue
			for {
				page, err := e.duePartition(ctx, status, shard, now, int32(limit), start)
				if err != nil {
					return nil, err
				}
				rows = append(rows, page.Rows...)
				if page.Next == nil || len(page.Rows) >= limit {
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
