package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/replay"
)

// deadLettered publishes an event whose consumer rejects it and archives
// the dead letter: an open incident over a dlq row.
func (p *platform) deadLettered(t *testing.T, id string) incident.Incident {
	t.Helper()
	p.broken.Store(true)
	p.publish(t, id, []byte(`{"invoice":"`+id+`"}`))
	p.consume(t, 1)
	p.archive(t, 1)
	p.broken.Store(false)
	return p.incident(t, id)
}

// revertWrite matches the incident write that moves a failed replay back to
// open.
func revertWrite(in any) bool {
	put, ok := in.(*dynamodb.PutItemInput)
	if !ok {
		return false
	}
	s, _ := put.Item["status"].(*ddbtypes.AttributeValueMemberS)
	return s != nil && s.Value == string(incident.StatusOpen)
}

// A replay that dies after moving its incident to retrying (here: the send
// fails, then reopening the incident fails too) never hides the event: the
// dispatch row was not touched before the send, the incident is shown as
// stuck once StuckAfter passed, and the sweeper reopens it (see the sweep
// package's TestSweeperReopensStuckReplays). Before, the row was reset to
// enqueued first and nothing noticed the missing message.
func TestReplayDyingMidwayLeavesNothingHidden(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := setupPlatform(t)
	inc := p.deadLettered(t, "evt_midway")
	p.env.Faults.Add(awslocal.Fault{Service: "SQS", Operation: "SendMessage", Resource: p.env.Queue(topic).URL, Times: 1})
	p.env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "PutItem", Resource: p.env.Resources.IncidentsTable, Match: revertWrite})

	out := p.replay.ReplayOne(ctx, replay.Request{Actor: "ops"}, inc.ID)
	require.Equal(t, replay.ResultError, out.Result)
	require.Contains(t, out.Error, "send")
	require.Contains(t, out.Error, "reopening the incident failed")
	got := p.incident(t, "evt_midway")
	require.Equal(t, incident.StatusRetrying, got.Status)
	require.Equal(t, outbox.StatusDLQ, p.row(t, "evt_midway").Status, "the row still says where the event is")
	require.Empty(t, p.env.ReceiveAll(ctx, p.env.Queue(topic).URL, 1, 0), "no message left")

	v, err := p.views.ViewIncident(ctx, inc.ID)
	require.NoError(t, err)
	require.False(t, v.Stuck)
	p.skew.Store(int64(time.Until(got.ReplayedAt.Add(incident.DefaultStuckAfter + time.Second))))
	v, err = p.views.ViewIncident(ctx, inc.ID)
	require.NoError(t, err)
	require.True(t, v.Stuck, "views flag a replay that was never confirmed")
}

// Step Functions retries replay-one (a timeout after the send, say). With
// force, the retried step would find the incident resolved and the row
// completed by the first attempt's message, and replay it again: the side
// effect twice. The request token makes the retry the same replay.
func TestRetriedForcedReplayRunsTheSideEffectOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := setupPlatform(t)
	inc := p.deadLettered(t, "evt_forced")
	req := replay.Request{Actor: "ops", Force: true, Token: "arn:aws:states:us-east-1:000000000000:execution:evp-dev-replay:run-1"}

	require.Equal(t, replay.ResultReplayed, p.replay.ReplayOne(ctx, req, inc.ID).Result)
	p.consume(t, 1)
	require.Equal(t, incident.StatusResolved, p.incident(t, "evt_forced").Status)
	require.Equal(t, outbox.StatusCompleted, p.row(t, "evt_forced").Status)

	// The retried step: the same request, after the consumer finished.
	again := p.replay.ReplayOne(ctx, req, inc.ID)
	require.Equal(t, replay.ResultReplayed, again.Result, "%+v", again)
	require.Empty(t, p.env.ReceiveAll(ctx, p.env.Queue(topic).URL, 1, time.Second), "nothing sent again")
	require.Len(t, p.handled, 1, "the side effect ran once")
	require.Equal(t, 1, p.incident(t, "evt_forced").ReplayCount)

	// A new request (another token) with force does replay again.
	req.Token = "run-2"
	require.Equal(t, replay.ResultReplayed, p.replay.ReplayOne(ctx, req, inc.ID).Result)
	p.consume(t, 1)
	require.Len(t, p.handled, 2)
}

// An event past its retention (incidents never expire; ledger items do):
// the replay restores its ledger record and row together before sending,
// so the row never exists without its ledger item, the consumer claims it
// normally, and a later publish of the id is a duplicate again.
func TestReplayRestoresAnEventPastItsRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := setupPlatform(t)
	inc := p.deadLettered(t, "evt_expired")
	for _, sk := range []string{dynamo.LedgerSK, dynamo.DispatchSK(topic)} {
		_, err := p.env.Emulators.DynamoDB().DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: aws.String(p.env.Resources.EventsTable),
			Key: map[string]ddbtypes.AttributeValue{
				"pk": &ddbtypes.AttributeValueMemberS{Value: dynamo.EventPK("evt_expired")},
				"sk": &ddbtypes.AttributeValueMemberS{Value: sk},
			},
		})
		require.NoError(t, err)
	}

	require.Equal(t, replay.ResultReplayed, p.replay.ReplayOne(ctx, replay.Request{Actor: "ops"}, inc.ID).Result)
	rec, rows, err := p.events.Load(ctx, "evt_expired")
	require.NoError(t, err, "the ledger record is back")
	require.Len(t, rows, 1)
	require.Equal(t, outbox.StatusEnqueued, rows[0].Status)
	require.True(t, rec.ExpiresAt.After(time.Now().Add(7*24*time.Hour)), "retained again")
	p.consume(t, 1)
	require.Equal(t, outbox.StatusCompleted, p.row(t, "evt_expired").Status)
	require.Equal(t, incident.StatusResolved, p.incident(t, "evt_expired").Status)
	res, err := p.ingest.Publish(ctx, []byte(`{"id":"evt_expired","tenantId":"acme","type":"stripe.invoice.paid","source":"stripe","timestamp":"2026-12-02T11:59:00Z","payload":{"invoice":"evt_expired"}}`))
	require.NoError(t, err)
	require.Equal(t, "duplicate_acknowledged", string(res.Status), "the id dedupes again")
}
