package outboxsweep_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/outboxsweep"
)

// claim plays a consumer that claimed the row at `at` and then lost its
// outcome write: the row stays processing under a lease that ends.
func (b *bundle) claim(t *testing.T, id string, at time.Time) {
	t.Helper()
	c, err := b.events.BeginProcessing(context.Background(), consume.Processing{
		Row: outbox.RowRef{Key: id, Topic: topic}, EventID: id, TenantID: "acme", Type: "stripe.invoice.paid",
		Owner: "msg-" + id, Until: at.Add(30 * time.Second), Now: at,
	})
	require.NoError(t, err)
	require.Equal(t, consume.Claimed, c.State)
}

// Rows stuck in processing (the consumer acknowledged the message but its
// completed or hand-back write was lost) are settled by the sweeper once
// the lease ended long ago: completed, or dlq when the message was
// dead-lettered after the claim. The claim kept the row's due time (the
// sender's lease end): a row found due before its lease may be settled is
// looked at again when it may.
func TestSweeperSettlesProcessingRowsWhoseOutcomeWasLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	b.strand(t, "evt_done", t0.Add(time.Minute))
	b.strand(t, "evt_dead", t0.Add(time.Minute))
	b.strand(t, "evt_recent", t0.Add(time.Minute))
	b.claim(t, "evt_done", t0)
	b.claim(t, "evt_dead", t0)
	b.claim(t, "evt_recent", t0.Add(10*time.Minute))
	_, _, err := incident.Upsert(ctx, b.env.Recovery(), incident.DeadLetter{
		EventKey: "evt_dead", EventID: "evt_dead", TenantID: "acme", Topic: topic, SourceQueue: "dlq", MessageID: "m1",
		ErrorCode: "subscriber_rejected", ErrorMessage: "410", FailedAt: t0.Add(time.Second), By: incident.ActorArchiver,
	}, t0.Add(time.Second))
	require.NoError(t, err)

	b.clock.Set(t0.Add(outboxsweep.DefaultSettleAfter + time.Minute))
	rep := run(t, b.sweeper(0, 0))
	require.Equal(t, 2, rep.Settled)
	require.Equal(t, 1, rep.Deferred, "a lease that ended recently may still come back")
	require.Zero(t, rep.Due, "processing rows are not sends: no outbox lag")
	done := b.row(t, "evt_done")
	require.Equal(t, outbox.StatusCompleted, done.Status)
	require.Contains(t, done.LastError, "settled by the sweeper")
	// The attempt whose outcome was lost is recorded as such (issue 36 §2),
	// by the same write, from its claim.
	require.Len(t, done.DeliveryAttempts, 1)
	require.Equal(t, outbox.OutcomeLost, done.DeliveryAttempts[0].Outcome)
	require.Equal(t, 1, done.DeliveryAttempts[0].N)
	require.True(t, done.DeliveryAttempts[0].At.Equal(t0), "lost since its claim at %s", done.DeliveryAttempts[0].At)
	require.Equal(t, outbox.StatusDLQ, b.row(t, "evt_dead").Status)
	require.Equal(t, outbox.StatusProcessing, b.row(t, "evt_recent").Status)
	require.Contains(t, b.metrics.String(), `"`+outboxsweep.MetricSettled+`":2`)

	rep = run(t, b.sweeper(0, 0))
	require.Zero(t, rep.Settled, "settling is done once")
	require.Zero(t, rep.Deferred, "a deferred row is not due before its time")

	b.clock.Set(t0.Add(10*time.Minute + 30*time.Second + outboxsweep.DefaultSettleAfter))
	require.Equal(t, 1, run(t, b.sweeper(0, 0)).Settled, "settled once it may be")
	require.Equal(t, outbox.StatusCompleted, b.row(t, "evt_recent").Status)
}

// A consumer that lags past the dispatch lease finds its row enqueued and
// due: the sweeper takes it out of the due index (nothing to send), the
// consumer's claim puts it back, and an outcome lost after that claim is
// still settled.
func TestSweeperSettlesALaggingConsumersLostOutcome(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	b.strand(t, "evt_lag", t0.Add(time.Minute))
	require.NoError(t, b.events.MarkEnqueued(ctx, outbox.RowRef{Key: "evt_lag", Topic: topic}, "ingest-died", t0))

	b.clock.Set(t0.Add(2 * time.Minute))
	rep := run(t, b.sweeper(0, 0))
	require.Equal(t, 1, rep.Unindexed)
	require.Zero(t, rep.Due+rep.Sent, "an enqueued row is never sent again")
	require.Zero(t, run(t, b.sweeper(0, 0)).Unindexed, "out of the due index")

	b.claim(t, "evt_lag", t0.Add(3*time.Minute)) // its outcome write is lost
	b.clock.Set(t0.Add(4 * time.Minute))
	require.Equal(t, 1, run(t, b.sweeper(0, 0)).Deferred, "back in the due index with the claim")
	b.clock.Set(t0.Add(3*time.Minute + 30*time.Second + outboxsweep.DefaultSettleAfter))
	require.Equal(t, 1, run(t, b.sweeper(0, 0)).Settled)
	require.Equal(t, outbox.StatusCompleted, b.row(t, "evt_lag").Status)
	require.Empty(t, b.received(t), "nothing was sent")
}

// One sweeper index partition that cannot be read does not stop the run:
// every other partition is swept and the failed one reported.
func TestSweeperSweepsTheOtherPartitionsWhenOneFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ids []string
	for i := 0; len(ids) < 12; i++ {
		id := "evt_p" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		b.strand(t, id, t0.Add(-time.Minute))
		ids = append(ids, id)
	}
	broken := table.Shard(ids[0], topic)
	partition := "due#" + string(rune('0'+broken))
	b.env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "Query", Match: func(in any) bool {
		q, ok := in.(*dynamodb.QueryInput)
		if !ok {
			return false
		}
		p, _ := q.ExpressionAttributeValues[":p"].(*ddbtypes.AttributeValueMemberS)
		return p != nil && p.Value == partition
	}})

	rep, err := b.sweeper(0, 0).Run(context.Background(), time.Now().Add(time.Minute))
	require.NoError(t, err, "one failed partition is reported, not fatal")
	require.Equal(t, []string{partition}, rep.FailedPartitions)
	got := b.received(t)
	for _, id := range ids {
		if table.Shard(id, topic) == broken {
			require.Zero(t, got[id], "%s is in the unreadable partition", id)
			continue
		}
		require.Equal(t, 1, got[id], "%s is swept", id)
	}
	require.Contains(t, b.metrics.String(), `"`+outboxsweep.MetricPartitionErrors+`":1`)
}

// A replay that died after moving its incident to retrying (its send
// failed and so did reopening the incident, or the Lambda died) is
// reopened by the sweeper once StuckAfter has passed, and counted.
func TestSweeperReopensStuckReplays(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	inc, _, err := incident.Upsert(ctx, b.env.Recovery(), incident.DeadLetter{
		EventKey: "evt_stuck", EventID: "evt_stuck", TenantID: "acme", Topic: topic, SourceQueue: "dlq", MessageID: "m1",
		ErrorCode: "x", ErrorMessage: "x", FailedAt: t0, By: incident.ActorArchiver,
	}, t0)
	require.NoError(t, err)
	_, err = incident.Update(ctx, b.incidents, inc.ID, func(i *incident.Incident) error {
		return i.StartReplay("ops", "", "tok", t0.Add(time.Minute), false)
	})
	require.NoError(t, err)

	b.clock.Set(t0.Add(10 * time.Minute))
	require.Zero(t, run(t, b.sweeper(0, 0)).StuckReplays, "not stuck yet")
	b.clock.Set(t0.Add(time.Minute + incident.DefaultStuckAfter + time.Second))
	rep := run(t, b.sweeper(0, 0))
	require.Equal(t, 1, rep.StuckReplays)
	got, err := b.incidents.Get(ctx, inc.ID)
	require.NoError(t, err)
	require.Equal(t, incident.StatusOpen, got.Status)
	last := got.History[len(got.History)-1]
	require.Equal(t, incident.ActorSweeper, last.By)
	require.True(t, strings.Contains(last.Note, "not confirmed"), last.Note)
	require.Contains(t, b.metrics.String(), `"`+outboxsweep.MetricStuckReplays+`":1`)

	// A replayed message that was merely slow still resolves it.
	require.NoError(t, b.incidents.ResolveReplay(ctx, inc.ID, b.clock.Now()))
	got, err = b.incidents.Get(ctx, inc.ID)
	require.NoError(t, err)
	require.Equal(t, incident.StatusResolved, got.Status)
}
