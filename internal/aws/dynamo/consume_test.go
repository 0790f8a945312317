package dynamo_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/outboxsweep"
)

func processing(id, owner string, now time.Time, lease time.Duration) consume.Processing {
	return consume.Processing{Row: outbox.RowRef{Key: id, Topic: "a.events"}, EventID: id, TenantID: "acme", Type: "content.published",
		Owner: owner, Until: now.Add(lease), Now: now}
}

func (b *leaseBundle) row(t *testing.T, id, topic string) outbox.Row {
	t.Helper()
	_, rows, err := b.events.Load(context.Background(), id)
	require.NoError(t, err)
	for _, r := range rows {
		if r.Topic == topic {
			return r
		}
	}
	t.Fatalf("no row %s/%s", id, topic)
	return outbox.Row{}
}

func (b *leaseBundle) rawRow(t *testing.T, id, topic string) map[string]ddbtypes.AttributeValue {
	t.Helper()
	out, err := b.env.DynamoDB.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(b.env.Resources.EventsTable), ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{
			"pk": &ddbtypes.AttributeValueMemberS{Value: dynamo.EventPK(id)},
			"sk": &ddbtypes.AttributeValueMemberS{Value: dynamo.DispatchSK(topic)},
		},
	})
	require.NoError(t, err)
	return out.Item
}

func sval(item map[string]ddbtypes.AttributeValue, k string) string {
	v, _ := item[k].(*ddbtypes.AttributeValueMemberS)
	if v == nil {
		return ""
	}
	return v.Value
}

// Guarantee 4: the consumer's claim is exclusive while its lease is live,
// a completed row is never claimed again, and an expired lease is taken
// over (no stuck in-progress rows).
func TestConsumerClaimLifecycle(t *testing.T) {
	t.Parallel()
	b := setupLease(t)
	ctx := context.Background()
	b.commit(t, "evt_c", "ingest", time.Minute, "a.events")

	// The consumer may overtake the sender's lease on a pending row: the
	// message is on the queue, so the sender's late mark must lose.
	t1 := leaseT0.Add(time.Second)
	c, err := b.events.BeginProcessing(ctx, processing("evt_c", "msg-1", t1, 30*time.Second))
	require.NoError(t, err)
	require.Equal(t, consume.Claimed, c.State)
	require.ErrorIs(t, b.events.MarkEnqueued(ctx, outbox.RowRef{Key: "evt_c", Topic: "a.events"}, "ingest", t1), outbox.ErrLeaseLost)

	r := b.row(t, "evt_c", "a.events")
	require.Equal(t, outbox.StatusProcessing, r.Status)
	require.Equal(t, "msg-1", r.LeaseOwner)
	require.True(t, r.LeaseUntil.Equal(t1.Add(30*time.Second)))
	require.True(t, r.NextRetryAt.Equal(leaseT0.Add(time.Minute)), "due when the sender's lease ends, as ingest wrote it")
	require.Equal(t, table.DuePartition("evt_c", "a.events"), sval(b.rawRow(t, "evt_c", "a.events"), "duePk"))

	// A second delivery while the lease is live is busy until the lease ends.
	c, err = b.events.BeginProcessing(ctx, processing("evt_c", "msg-2", t1.Add(10*time.Second), 30*time.Second))
	require.NoError(t, err)
	require.Equal(t, consume.Busy, c.State)
	require.True(t, c.LeaseUntil.Equal(t1.Add(30*time.Second)))

	// Once the lease has expired the row is taken over; the old owner can no
	// longer record an outcome.
	t2 := t1.Add(31 * time.Second)
	c, err = b.events.BeginProcessing(ctx, processing("evt_c", "msg-2", t2, 30*time.Second))
	require.NoError(t, err)
	require.Equal(t, consume.Claimed, c.State)
	require.ErrorIs(t, b.events.MarkCompleted(ctx, consume.Completion{Row: outbox.RowRef{Key: "evt_c", Topic: "a.events"}, Owner: "msg-1", Now: t2}), outbox.ErrLeaseLost)
	require.ErrorIs(t, b.events.MarkRetry(ctx, consume.Release{Row: outbox.RowRef{Key: "evt_c", Topic: "a.events"}, Owner: "msg-1", LastError: "late", RetryAt: t2, Now: t2}), outbox.ErrLeaseLost)

	require.NoError(t, b.events.MarkCompleted(ctx, consume.Completion{Row: outbox.RowRef{Key: "evt_c", Topic: "a.events"}, Owner: "msg-2", Now: t2.Add(time.Second)}))
	r = b.row(t, "evt_c", "a.events")
	require.Equal(t, outbox.StatusCompleted, r.Status)
	require.Empty(t, r.LeaseOwner)
	require.True(t, r.LeaseUntil.IsZero())
	raw := b.rawRow(t, "evt_c", "a.events")
	require.NotContains(t, raw, "duePk", "a completed row leaves the due index")
	require.Equal(t, dynamo.FormatTime(t2.Add(time.Second)), sval(raw, "completedAt"))

	// Completed is final for every later delivery, even long after.
	c, err = b.events.BeginProcessing(ctx, processing("evt_c", "msg-3", t2.Add(time.Hour), 30*time.Second))
	require.NoError(t, err)
	require.Equal(t, consume.AlreadyCompleted, c.State)
	require.ErrorIs(t, b.events.MarkCompleted(ctx, consume.Completion{Row: outbox.RowRef{Key: "evt_c", Topic: "a.events"}, Owner: "msg-2", Now: t2.Add(time.Hour)}), outbox.ErrLeaseLost, "completed twice is refused")
}

func TestConsumerRetryHandsTheRowBack(t *testing.T) {
	t.Parallel()
	b := setupLease(t)
	ctx := context.Background()
	b.commit(t, "evt_r", "ingest", time.Minute, "a.events")
	require.NoError(t, b.events.MarkEnqueued(ctx, outbox.RowRef{Key: "evt_r", Topic: "a.events"}, "ingest", leaseT0))

	c, err := b.events.BeginProcessing(ctx, processing("evt_r", "msg-1", leaseT0, time.Minute))
	require.NoError(t, err)
	require.Equal(t, consume.Claimed, c.State)
	back := leaseT0.Add(5 * time.Second)
	require.NoError(t, b.events.MarkRetry(ctx, consume.Release{Row: outbox.RowRef{Key: "evt_r", Topic: "a.events"}, Owner: "msg-1", LastError: "subscriber answered 503", RetryAt: back, Now: leaseT0}))

	r := b.row(t, "evt_r", "a.events")
	require.Equal(t, outbox.StatusEnqueued, r.Status)
	require.Equal(t, "subscriber answered 503", r.LastError)
	require.Empty(t, r.LeaseOwner)
	require.True(t, r.LeaseUntil.IsZero())
	require.True(t, r.NextRetryAt.Equal(back))
	require.Equal(t, table.DuePartition("evt_r", "a.events"), sval(b.rawRow(t, "evt_r", "a.events"), "duePk"), "a retried row stays in the due index")
	require.Equal(t, 0, r.Attempts, "consumer retries do not spend the sender's attempts")

	// The redelivery claims at once (its lease was released, not left to
	// expire); a later success keeps lastError as history.
	c, err = b.events.BeginProcessing(ctx, processing("evt_r", "msg-1", back, time.Minute))
	require.NoError(t, err)
	require.Equal(t, consume.Claimed, c.State)
	require.NoError(t, b.events.MarkCompleted(ctx, consume.Completion{Row: outbox.RowRef{Key: "evt_r", Topic: "a.events"}, Owner: "msg-1", Now: back}))
	r = b.row(t, "evt_r", "a.events")
	require.Equal(t, outbox.StatusCompleted, r.Status)
	require.Equal(t, "subscriber answered 503", r.LastError, "the history of the last failure is kept")
}

func TestConsumerClaimCreatesAMissingRow(t *testing.T) {
	t.Parallel()
	b := setupLease(t)
	ctx := context.Background()
	// The ledger item exists (rows of another topic), but not this row.
	b.commit(t, "evt_m", "ingest", time.Minute, "b.events")
	c, err := b.events.BeginProcessing(ctx, processing("evt_m", "msg-1", leaseT0, time.Minute))
	require.NoError(t, err)
	require.Equal(t, consume.Claimed, c.State)
	r := b.row(t, "evt_m", "a.events")
	require.Equal(t, outbox.StatusProcessing, r.Status)
	require.Equal(t, "evt_m", r.EventID)
	require.Equal(t, "acme", r.TenantID)
	require.Equal(t, "content.published", r.Type)
	require.True(t, r.CreatedAt.Equal(leaseT0))
	raw := b.rawRow(t, "evt_m", "a.events")
	exp, _ := raw["expiresAt"].(*ddbtypes.AttributeValueMemberN)
	require.NotNil(t, exp, "a created row expires like the rest of the collection")

	require.Equal(t, leaseT0.Add(24*time.Hour).Unix(), mustInt(t, exp.Value),
		"a created row expires with its ledger item, never after it")

	// Nothing at all stored for the event: no row is created (it would
	// outlive its ledger item and block the id later); the message is
	// for the DLQ, where a replay restores both.
	c, err = b.events.BeginProcessing(ctx, processing("evt_gone", "msg-2", leaseT0, time.Minute))
	require.NoError(t, err)
	require.Equal(t, consume.LedgerMissing, c.State)
	require.Empty(t, b.rawRow(t, "evt_gone", "a.events"), "no row without its ledger item")
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err)
	return v
}

// TestDueIndexKeysChangeOnlyAtCreationAndOutcome: a row enters the due
// index (KEYS_ONLY: duePk, nextRetryAt) when ingest creates it and leaves it
// with its outcome; the enqueued mark and the consumer's claim keep both
// keys, so they write nothing to the index. A consumer's retry moves its
// due time to when the message is back; a row out of the index (dead-
// lettered, or taken out by the sweeper) is put back by the next claim.
// A row written before the due index (sweepPk) leaves the legacy index on
// its first transition.
func TestDueIndexKeysChangeOnlyAtCreationAndOutcome(t *testing.T) {
	t.Parallel()
	b := setupLease(t)
	ctx := context.Background()
	ref := outbox.RowRef{Key: "evt_sp", Topic: "a.events"}
	type keys struct{ duePk, next string }
	index := func(status outbox.Status) keys {
		t.Helper()
		raw := b.rawRow(t, ref.Key, ref.Topic)
		require.Equal(t, string(status), sval(raw, "status"))
		require.NotContains(t, raw, "sweepPk", "never in the legacy index")
		n, _ := raw["nextRetryAt"].(*ddbtypes.AttributeValueMemberN)
		k := keys{duePk: sval(raw, "duePk")}
		if n != nil {
			k.next = n.Value
		}
		return k
	}
	out := keys{}
	b.commit(t, ref.Key, "ingest", time.Minute, ref.Topic)
	created := index(outbox.StatusPending)
	require.Equal(t, table.DuePartition(ref.Key, ref.Topic), created.duePk)
	require.Equal(t, strconv.FormatInt(leaseT0.Add(time.Minute).UnixMilli(), 10), created.next, "due at the dispatch lease's end")

	require.NoError(t, b.events.MarkEnqueued(ctx, ref, "ingest", leaseT0))
	require.Equal(t, created, index(outbox.StatusEnqueued), "the enqueued mark keeps the index keys")
	c, err := b.events.BeginProcessing(ctx, processing(ref.Key, "msg-1", leaseT0, time.Minute))
	require.NoError(t, err)
	require.Equal(t, consume.Claimed, c.State)
	require.Equal(t, created, index(outbox.StatusProcessing), "the claim keeps the index keys")

	back := leaseT0.Add(time.Second)
	require.NoError(t, b.events.MarkRetry(ctx, consume.Release{Row: ref, Owner: "msg-1", LastError: "503", RetryAt: back, Now: leaseT0}))
	retried := index(outbox.StatusEnqueued)
	require.Equal(t, keys{created.duePk, strconv.FormatInt(back.UnixMilli(), 10)}, retried, "due when the message is back")

	marked, err := b.events.MarkDLQ(ctx, ref, leaseT0.Add(2*time.Second))
	require.NoError(t, err)
	require.True(t, marked)
	require.Equal(t, out.duePk, index(outbox.StatusDLQ).duePk, "an outcome leaves the index")

	c, err = b.events.BeginProcessing(ctx, processing(ref.Key, "msg-2", leaseT0.Add(time.Hour), time.Minute))
	require.NoError(t, err)
	require.Equal(t, consume.Claimed, c.State)
	require.Equal(t, created.duePk, index(outbox.StatusProcessing).duePk, "a claim puts a row back")
	require.NoError(t, b.events.MarkCompleted(ctx, consume.Completion{Row: ref, Owner: "msg-2", Now: leaseT0.Add(time.Hour)}))
	require.Equal(t, out.duePk, index(outbox.StatusCompleted).duePk)

	// And the sweeper's own reads agree: nothing due in any partition.
	for _, status := range []outbox.Status{"", outbox.StatusPending, outbox.StatusFailed, outbox.StatusProcessing} {
		for shard := range table.SweepShards {
			page, err := b.events.DuePage(ctx, outboxsweep.DueParams{Status: status, Shard: shard, Now: leaseT0.Add(48 * time.Hour), Limit: 10})
			require.NoError(t, err)
			require.Empty(t, page.Rows, "%s#%d", status, shard)
		}
	}

	// A row of the legacy index (written before the due index) is read
	// from it by status, and leaves it on its next transition.
	legacy := outbox.RowRef{Key: "evt_legacy", Topic: "a.events"}
	b.commit(t, legacy.Key, "ingest", time.Minute, legacy.Topic)
	_, err = b.env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(b.env.Resources.EventsTable),
		Key: map[string]ddbtypes.AttributeValue{
			"pk": &ddbtypes.AttributeValueMemberS{Value: dynamo.EventPK(legacy.Key)},
			"sk": &ddbtypes.AttributeValueMemberS{Value: dynamo.DispatchSK(legacy.Topic)},
		},
		UpdateExpression:          aws.String("SET sweepPk = :sp REMOVE duePk"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":sp": &ddbtypes.AttributeValueMemberS{Value: table.SweepPartition("pending", legacy.Key, legacy.Topic)}},
	})
	require.NoError(t, err)
	page, err := b.events.DuePage(ctx, outboxsweep.DueParams{Status: outbox.StatusPending, Shard: table.Shard(legacy.Key, legacy.Topic), Now: leaseT0.Add(time.Hour), Limit: 10})
	require.NoError(t, err)
	require.Len(t, page.Rows, 1, "found through the legacy index")
	require.NoError(t, b.events.MarkEnqueued(ctx, legacy, "ingest", leaseT0))
	raw := b.rawRow(t, legacy.Key, legacy.Topic)
	require.NotContains(t, raw, "sweepPk", "out of the legacy index")
	require.NotContains(t, raw, "duePk", "an enqueued row is not put in the due index")
}
