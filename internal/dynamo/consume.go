package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/siteswarm/eventplatform/internal/clip"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/table"
)

// The consumer side of the outbox rows: processing → completed, or back to
// enqueued with lastError. Every write is conditional; none REMOVEs.

var _ consume.Rows = (*Events)(nil)

// claimAttempts bounds BeginProcessing's re-tries when the row changes
// between its conditional write and the read that explains a refusal.
const claimAttempts = 3

// BeginProcessing claims the outbox row for a consumer (status processing,
// lease to the owner until p.Until, sweeper index moved to the processing
// partition with nextRetryAt = lease expiry). It is allowed from any status
// except completed and a processing row under a live lease. A missing row
// is created with the event's identity and p.ExpiresAt, so a replay of an
// event whose items expired still runs exactly once.
//
// A refused claim costs one strongly consistent GetItem to tell completed
// from busy; the success path is a single UpdateItem.
func (e *Events) BeginProcessing(ctx context.Context, p consume.Processing) (consume.Claim, error) {
	for range claimAttempts {
		err := e.beginProcessing(ctx, p)
		if err == nil {
			return consume.Claim{State: consume.Claimed}, nil
		}
		if !errors.Is(err, errCondition) {
			return consume.Claim{}, fmt.Errorf("dynamo: begin processing %s/%s: %w", p.EventID, p.Topic, err)
		}
		row, found, err := e.consumerRow(ctx, p.EventID, p.Topic)
		if err != nil {
			return consume.Claim{}, fmt.Errorf("dynamo: begin processing %s/%s: %w", p.EventID, p.Topic, err)
		}
		switch {
		case found && row.Status == outbox.StatusCompleted:
			return consume.Claim{State: consume.AlreadyCompleted}, nil
		case found && row.Status == outbox.StatusProcessing && row.LeaseUntil.After(p.Now):
			return consume.Claim{State: consume.Busy, LeaseUntil: row.LeaseUntil}, nil
		}
		// The row moved on between the write and the read: try again.
	}
	return consume.Claim{}, fmt.Errorf("dynamo: begin processing %s/%s: the row kept changing", p.EventID, p.Topic)
}

func (e *Events) beginProcessing(ctx context.Context, p consume.Processing) error {
	until := millis(p.Until)
	_, err := e.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(e.Table),
		Key:       rowKey(p.EventID, p.Topic),
		UpdateExpression: aws.String("SET #s = :processing, sweepPk = :sp, leaseOwner = :o, leaseUntil = :lu, nextRetryAt = :lu, updatedAt = :now, " +
			"eventId = if_not_exists(eventId, :eid), topic = if_not_exists(topic, :topic), tenantId = if_not_exists(tenantId, :tenant), " +
			"#ty = if_not_exists(#ty, :type), attempts = if_not_exists(attempts, :zero), maxAttempts = if_not_exists(maxAttempts, :zero), " +
			"lastError = if_not_exists(lastError, :empty), createdAt = if_not_exists(createdAt, :now), expiresAt = if_not_exists(expiresAt, :exp)"),
		ConditionExpression:      aws.String("attribute_not_exists(pk) OR (#s <> :completed AND (#s <> :processing OR leaseUntil <= :nowms))"),
		ExpressionAttributeNames: map[string]string{"#s": "status", "#ty": "type"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":processing": s(string(outbox.StatusProcessing)),
			":completed":  s(string(outbox.StatusCompleted)),
			":sp":         s(table.SweepPartition(string(outbox.StatusProcessing), p.EventID, p.Topic)),
			":o":          s(p.Owner),
			":lu":         n(until),
			":now":        s(FormatTime(p.Now)),
			":nowms":      n(millis(p.Now)),
			":eid":        s(p.EventID),
			":topic":      s(p.Topic),
			":tenant":     s(p.TenantID),
			":type":       s(p.Type),
			":zero":       n(0),
			":empty":      s(""),
			":exp":        n(p.ExpiresAt.Unix()),
		},
	})
	var ccf *ddbtypes.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return errCondition
	}
	return err
}

// MarkCompleted records the lease owner's success: status completed (sweeper
// index partition completed#…, nextRetryAt = completion time), lease
// cleared, completedAt set.
func (e *Events) MarkCompleted(ctx context.Context, eventID, topic, owner string, now time.Time) error {
	err := e.update(ctx, eventID, topic,
		"SET #s = :completed, sweepPk = :sp, leaseOwner = :empty, leaseUntil = :zero, nextRetryAt = :nowms, updatedAt = :now, completedAt = :now",
		"#s = :processing AND leaseOwner = :o",
		map[string]ddbtypes.AttributeValue{
			":completed":  s(string(outbox.StatusCompleted)),
			":processing": s(string(outbox.StatusProcessing)),
			":sp":         s(table.SweepPartition(string(outbox.StatusCompleted), eventID, topic)),
			":empty":      s(""),
			":zero":       n(0),
			":nowms":      n(millis(now)),
			":now":        s(FormatTime(now)),
			":o":          s(owner),
		})
	if errors.Is(err, errCondition) {
		return outbox.ErrLeaseLost
	}
	if err != nil {
		return fmt.Errorf("dynamo: mark completed %s/%s: %w", eventID, topic, err)
	}
	return nil
}

// MarkRetry hands the owner's row back after a failure: status enqueued
// (the message is still on, or back on, its queue), lease cleared,
// lastError recorded for the operator and the DLQ archiver, nextRetryAt =
// when the message is expected back (0 when it went to the DLQ).
func (e *Events) MarkRetry(ctx context.Context, eventID, topic, owner, lastError string, retryAt, now time.Time) error {
	err := e.update(ctx, eventID, topic,
		"SET #s = :enqueued, sweepPk = :sp, leaseOwner = :empty, leaseUntil = :zero, nextRetryAt = :next, lastError = :e, updatedAt = :now",
		"#s = :processing AND leaseOwner = :o",
		map[string]ddbtypes.AttributeValue{
			":enqueued":   s(string(outbox.StatusEnqueued)),
			":processing": s(string(outbox.StatusProcessing)),
			":sp":         s(table.SweepPartition(string(outbox.StatusEnqueued), eventID, topic)),
			":empty":      s(""),
			":zero":       n(0),
			":next":       n(millis(retryAt)),
			":e":          s(clip.String(lastError, outbox.MaxErrorLen)),
			":now":        s(FormatTime(now)),
			":o":          s(owner),
		})
	if errors.Is(err, errCondition) {
		return outbox.ErrLeaseLost
	}
	if err != nil {
		return fmt.Errorf("dynamo: mark retry %s/%s: %w", eventID, topic, err)
	}
	return nil
}

// consumerRow reads one outbox row with a strongly consistent read.
func (e *Events) consumerRow(ctx context.Context, eventID, topic string) (outbox.Row, bool, error) {
	out, err := e.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(e.Table),
		Key:            rowKey(eventID, topic),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return outbox.Row{}, false, err
	}
	if len(out.Item) == 0 {
		return outbox.Row{}, false, nil
	}
	var it rowItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return outbox.Row{}, false, fmt.Errorf("decode row: %w", err)
	}
	return it.row(), true, nil
}
