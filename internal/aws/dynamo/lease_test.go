package dynamo_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/outboxsweep"
)

var leaseT0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

type leaseBundle struct {
	env    *awslocaltest.Env
	events *dynamo.Events
}

func setupLease(t *testing.T) *leaseBundle {
	t.Helper()
	env := awslocaltest.NewEnv(t)
	return &leaseBundle{env: env, events: env.Events()}
}

// commit stores an event with one row per topic, leased to owner until
// leaseT0+lease.
func (b *leaseBundle) commit(t *testing.T, id, owner string, lease time.Duration, topics ...string) {
	t.Helper()
	rec := ledger.Record{
		Key:    id,
		Event:  envelope.Event{SchemaVersion: 1, ID: id, TenantID: "acme", Type: "content.published", Source: "cms", Timestamp: leaseT0, Payload: []byte(`{"a":1}`)},
		Topics: topics, PayloadHash: "h", Status: ledger.StatusReceived, CreatedAt: leaseT0, ExpiresAt: leaseT0.Add(24 * time.Hour),
	}
	var rows []outbox.Row
	for _, tp := range topics {
		rows = append(rows, outbox.Row{Key: id, EventID: id, Topic: tp, TenantID: "acme", Type: rec.Event.Type, Status: outbox.StatusPending,
			MaxAttempts: 5, NextRetryAt: leaseT0.Add(lease), LeaseUntil: leaseT0.Add(lease), LeaseOwner: owner, CreatedAt: leaseT0, UpdatedAt: leaseT0})
	}
	require.NoError(t, b.events.Commit(context.Background(), ingest.CommitParams{Record: rec, Rows: rows}))
}

func TestMarkTransitions(t *testing.T) {
	t.Parallel()
	b := setupLease(t)
	ctx := context.Background()
	b.commit(t, "evt_mark", "o1", time.Minute, "a.events", "b.events")

	require.NoError(t, b.events.MarkEnqueued(ctx, outbox.RowRef{Key: "evt_mark", Topic: "a.events"}, "o1", leaseT0.Add(time.Second)))
	require.ErrorIs(t, b.events.MarkEnqueued(ctx, outbox.RowRef{Key: "evt_mark", Topic: "a.events"}, "o1", leaseT0.Add(time.Second)), outbox.ErrLeaseLost, "an enqueued row is final for senders")
	require.NoError(t, b.events.MarkFailed(ctx, outbox.Failure{Row: outbox.RowRef{Key: "evt_mark", Topic: "b.events"}, EventID: "evt_mark", Owner: "o1", Attempts: 1, Err: "boom", NextRetryAt: leaseT0.Add(2 * time.Minute), Now: leaseT0.Add(time.Second)}))

	_, rows, err := b.events.Load(ctx, "evt_mark")
	require.NoError(t, err)
	byTopic := map[string]outbox.Row{}
	for _, r := range rows {
		byTopic[r.Topic] = r
	}
	require.Equal(t, outbox.StatusEnqueued, byTopic["a.events"].Status)
	require.Empty(t, byTopic["a.events"].LeaseOwner)
	f := byTopic["b.events"]
	require.Equal(t, outbox.StatusFailed, f.Status)
	require.Equal(t, 1, f.Attempts)
	require.Equal(t, "boom", f.LastError)
	require.True(t, f.Claimable(leaseT0.Add(time.Second)), "a failed row is free for a re-drive at once")

	// Only the failed row is due for the sweeper, and only at its retry time.
	due, err := b.events.Due(ctx, leaseT0.Add(time.Minute), 10)
	require.NoError(t, err)
	require.Empty(t, due)
	due, err = b.events.Due(ctx, leaseT0.Add(2*time.Minute), 10)
	require.NoError(t, err)
	require.Len(t, due, 1)
	require.Equal(t, "b.events", due[0].Topic)
}

func TestDueIsOldestFirstAcrossShards(t *testing.T) {
	t.Parallel()
	b := setupLease(t)
	ctx := context.Background()
	for i, id := range []string{"e1", "e2", "e3", "e4", "e5", "e6"} {
		b.commit(t, id, "o", time.Duration(10-i)*time.Second, "a.events")
	}
	due, err := b.events.Due(ctx, leaseT0.Add(time.Hour), 4)
	require.NoError(t, err)
	require.Len(t, due, 4, "limit is honoured")
	for i := 1; i < len(due); i++ {
		require.False(t, due[i].NextRetryAt.Before(due[i-1].NextRetryAt), "oldest first")
	}
	require.Equal(t, "e6", due[0].EventID)
}

// An erased row is never claimed for a send, by a duplicate's re-drive
// (Claim) or by the sweeper (ClaimDue): the consumer would refuse the
// message, which would carry the erased event.
func TestAnErasedRowIsNeverClaimedForASend(t *testing.T) {
	t.Parallel()
	b := setupLease(t)
	ctx := context.Background()
	b.commit(t, "evt_gone", "ingest", time.Minute, "a.events")
	b.commit(t, "evt_kept", "ingest", time.Minute, "a.events")
	_, err := b.env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(b.env.Resources.EventsTable), Key: rawKey("evt_gone", "a.events"),
		UpdateExpression:          aws.String("SET erasedAt = :e"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":e": &ddbtypes.AttributeValueMemberS{Value: dynamo.FormatTime(leaseT0)}},
	})
	require.NoError(t, err)
	later := leaseT0.Add(2 * time.Minute) // the lease ended
	for _, id := range []string{"evt_gone", "evt_kept"} {
		ok, err := b.events.Claim(ctx, outbox.ClaimParams{Row: outbox.RowRef{Key: id, Topic: "a.events"}, Owner: "redrive", Now: later, Lease: time.Minute})
		require.NoError(t, err)
		require.Equal(t, id == "evt_kept", ok, id)
	}
	b.commit(t, "evt_gone2", "ingest", time.Minute, "a.events")
	_, err = b.env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(b.env.Resources.EventsTable), Key: rawKey("evt_gone2", "a.events"),
		UpdateExpression:          aws.String("SET erasedAt = :e"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":e": &ddbtypes.AttributeValueMemberS{Value: dynamo.FormatTime(leaseT0)}},
	})
	require.NoError(t, err)
	row, found, err := b.events.Row(ctx, outbox.RowRef{Key: "evt_gone2", Topic: "a.events"})
	require.NoError(t, err)
	require.True(t, found)
	ok, err := b.events.ClaimDue(ctx, outboxsweep.DueClaim{Seen: row, Owner: "sweeper", Now: later, Lease: time.Minute})
	require.NoError(t, err)
	require.False(t, ok)
}
