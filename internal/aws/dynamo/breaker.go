package dynamo

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/subscriberhealth"
)

// Breakers keeps the topics' subscriber-health records in the events
// table: one item per topic, pk "HEALTH#<topic>", sk "HEALTH", outside
// every index (no tenant, status or TTL attribute). A healthy topic's
// record is never written per delivery; the consumers write it when
// deliveries fail, the health monitor and operators when its state
// changes.
type Breakers struct {
	Client *dynamodb.Client
	Table  string
}

var _ subscriberhealth.Store = (*Breakers)(nil)

const (
	healthPrefix = "HEALTH#"
	healthSK     = "HEALTH"
)

// breakerItem is the DynamoDB shape of a health.Health.
type breakerItem struct {
	PK          string `dynamodbav:"pk"`
	SK          string `dynamodbav:"sk"`
	Topic       string `dynamodbav:"topic"`
	State       string `dynamodbav:"state"`
	Since       int64  `dynamodbav:"since"`
	Reason      string `dynamodbav:"reason"`
	LastError   string `dynamodbav:"lastError"`
	FailedAt    int64  `dynamodbav:"failedAt"`
	ProbeAt     int64  `dynamodbav:"probeAt"`
	Streak      int    `dynamodbav:"streak"`
	Level       int    `dynamodbav:"level"`
	OutageSince int64  `dynamodbav:"outageSince"`
	Announced   bool   `dynamodbav:"announced"`
	Escalated   bool   `dynamodbav:"escalated"`
	Concurrency int    `dynamodbav:"concurrency"`
	RampedAt    int64  `dynamodbav:"rampedAt"`
	Backlog     int    `dynamodbav:"backlog"`
	RecoveredAt int64  `dynamodbav:"recoveredAt"`
	Version     int64  `dynamodbav:"ver"`
}

func breakerKey(topic string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{"pk": str(healthPrefix + topic), "sk": str(healthSK)}
}

func toBreakerItem(h subscriberhealth.Health) breakerItem {
	return breakerItem{
		PK: healthPrefix + h.Topic, SK: healthSK, Topic: h.Topic, State: string(h.State),
		Since: millis(h.Since), Reason: h.Reason, LastError: h.LastError, FailedAt: millis(h.FailedAt),
		ProbeAt: millis(h.ProbeAt), Streak: h.Streak, Level: h.Level, OutageSince: millis(h.OutageSince),
		Announced: h.Announced, Escalated: h.Escalated, Concurrency: h.Concurrency, RampedAt: millis(h.RampedAt), Backlog: h.Backlog,
		RecoveredAt: millis(h.RecoveredAt), Version: h.Version,
	}
}

func fromBreakerItem(it breakerItem) subscriberhealth.Health {
	st := subscriberhealth.State(it.State)
	if st == "" {
		st = subscriberhealth.Closed
	}
	return subscriberhealth.Health{
		Topic: it.Topic, State: st, Since: fromMillis(it.Since), Reason: it.Reason, LastError: it.LastError,
		FailedAt: fromMillis(it.FailedAt), ProbeAt: fromMillis(it.ProbeAt), Streak: it.Streak, Level: it.Level,
		OutageSince: fromMillis(it.OutageSince), Announced: it.Announced, Escalated: it.Escalated,
		Concurrency: it.Concurrency, RampedAt: fromMillis(it.RampedAt), Backlog: it.Backlog, RecoveredAt: fromMillis(it.RecoveredAt), Version: it.Version,
	}
}

// Get reads a topic's record (strongly consistent), or a closed one of
// version 0.
func (b *Breakers) Get(ctx context.Context, topic string) (subscriberhealth.Health, error) {
	out, err := b.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(b.Table), Key: breakerKey(topic), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return subscriberhealth.Health{}, fmt.Errorf("dynamo: read the %s breaker: %w", topic, err)
	}
	if out.Item == nil {
		return subscriberhealth.Health{Topic: topic, State: subscriberhealth.Closed}, nil
	}
	var it breakerItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return subscriberhealth.Health{}, fmt.Errorf("dynamo: read the %s breaker: %w", topic, err)
	}
	it.Topic = topic
	return fromBreakerItem(it), nil
}

// Fail adds a batch's failures to the streak in one UpdateItem, creating
// the record closed, and returns the record as written (returned values
// cost no read capacity).
func (b *Breakers) Fail(ctx context.Context, f subscriberhealth.Failures) (subscriberhealth.Health, error) {
	out, err := b.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(b.Table),
		Key:                      breakerKey(f.Topic),
		UpdateExpression:         aws.String("SET topic = :topic, #state = if_not_exists(#state, :closed), since = if_not_exists(since, :at), lastError = :err, failedAt = :at, ver = if_not_exists(ver, :zero) + :one ADD streak :n"),
		ExpressionAttributeNames: map[string]string{"#state": "state"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":topic": str(f.Topic), ":closed": str(string(subscriberhealth.Closed)), ":at": num(millis(f.At)),
			":err": str(f.LastError), ":zero": num(0), ":one": num(1), ":n": num(int64(f.Failures)),
		},
		ReturnValues: ddbtypes.ReturnValueAllNew,
	})
	if err != nil {
		return subscriberhealth.Health{}, fmt.Errorf("dynamo: record %d failures of %s: %w", f.Failures, f.Topic, err)
	}
	var it breakerItem
	if err := attributevalue.UnmarshalMap(out.Attributes, &it); err != nil {
		return subscriberhealth.Health{}, fmt.Errorf("dynamo: record failures of %s: %w", f.Topic, err)
	}
	return fromBreakerItem(it), nil
}

// Reset zeroes a non-zero streak; nothing is written otherwise.
func (b *Breakers) Reset(ctx context.Context, topic string) error {
	_, err := b.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(b.Table),
		Key:                       breakerKey(topic),
		UpdateExpression:          aws.String("SET streak = :zero, ver = ver + :one"),
		ConditionExpression:       aws.String("streak > :zero"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":zero": num(0), ":one": num(1)},
	})
	var ccf *ddbtypes.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("dynamo: end the %s streak: %w", topic, err)
	}
	return nil
}

// Swap replaces the record read as old with next (version old.Version+1),
// conditionally on the stored version.
func (b *Breakers) Swap(ctx context.Context, old, next subscriberhealth.Health) (subscriberhealth.Health, error) {
	next.Topic, next.Version = old.Topic, old.Version+1
	item, err := attributevalue.MarshalMap(toBreakerItem(next))
	if err != nil {
		return subscriberhealth.Health{}, err
	}
	in := &dynamodb.PutItemInput{TableName: aws.String(b.Table), Item: item}
	if old.Version == 0 {
		in.ConditionExpression = aws.String("attribute_not_exists(pk)")
	} else {
		in.ConditionExpression = aws.String("ver = :ver")
		in.ExpressionAttributeValues = map[string]ddbtypes.AttributeValue{":ver": num(old.Version)}
	}
	_, err = b.Client.PutItem(ctx, in)
	var ccf *ddbtypes.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return subscriberhealth.Health{}, subscriberhealth.ErrConflict
	}
	if err != nil {
		return subscriberhealth.Health{}, fmt.Errorf("dynamo: write the %s breaker: %w", old.Topic, err)
	}
	return next, nil
}
