package consume_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/sqsqueue"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/replay"
	"github.com/siteswarm/eventplatform/internal/wire/wiretest"
)

// The whole recovery loop with the real parts: the consumer dead-letters a
// message, the DLQ archiver opens an incident, replay re-sends it with
// replayOf, the consumer succeeds and attests: the incident is resolved by
// "replay". A redelivered replay message attests again harmlessly.
func TestReplayedMessageResolvesItsIncident(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	store := b.env.Incidents()
	b.rebuild(t, func(_ *consume.Config, d *consume.Deps) { d.Incidents = store })

	b.publish(t, "evt_replay", "")
	broken := true
	b.handler.fail = func(consume.Message, int) error {
		if broken {
			return consume.Permanent("subscriber_rejected", errors.New("subscriber answered 401 Unauthorized"))
		}
		return nil
	}
	require.Empty(t, b.invoke(t, b.receive(t, 1, 5*time.Second)))

	// The DLQ archiver drains the dead letter into an open incident.
	arch := wiretest.Archiver(t, b.env, wiretest.Opts{})
	dead := b.env.ReceiveAll(ctx, b.q.DLQURL, 1, 2*time.Second)
	require.Len(t, dead, 1)
	resp, err := arch.Handle(ctx, lambdalocal.SQSEvent(b.q.DLQARN, dead))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	id := incident.ID(key("evt_replay"), topicName)
	inc, err := store.Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, incident.StatusOpen, inc.Status)
	require.Equal(t, "subscriber_rejected", inc.ErrorCode)

	// The operator fixes the subscriber and replays.
	broken = false
	rp := wiretest.Replay(t, b.env, wiretest.Opts{}).Replay
	out := rp.ReplayOne(ctx, replay.Request{Actor: "ops"}, id)
	require.Equal(t, replay.ResultReplayed, out.Result, "%+v", out)

	msgs := b.receive(t, 1, 5*time.Second)
	require.Len(t, msgs, 1)
	require.Equal(t, id, aws.ToString(msgs[0].MessageAttributes[outbox.AttrReplayOf].StringValue))
	require.Empty(t, b.invoke(t, msgs))
	inc, err = store.Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, incident.StatusResolved, inc.Status)
	require.Equal(t, incident.ActorReplay, inc.ResolvedBy)
	require.WithinDuration(t, time.Now(), inc.ResolvedAt, time.Minute)
	require.Equal(t, outbox.StatusCompleted, b.row(t, "evt_replay").Status)
	_, effects, _ := b.handler.counts()
	require.Equal(t, 1, effects["evt_replay"])
	// Both attempts kept: the refused original, then the replay's.
	tries := b.row(t, "evt_replay").DeliveryAttempts
	require.Len(t, tries, 2)
	require.Equal(t, []outbox.Delivery{outbox.DeliveryOriginal, outbox.DeliveryReplay}, []outbox.Delivery{tries[0].Delivery, tries[1].Delivery})
	require.Equal(t, []outbox.AttemptOutcome{outbox.OutcomeDeadLettered, outbox.OutcomeDelivered}, []outbox.AttemptOutcome{tries[0].Outcome, tries[1].Outcome})
	require.Equal(t, "subscriber_rejected", tries[0].Error)

	// The same replay message again (an SQS duplicate): acknowledged, not
	// run, and the attestation is a no-op on a resolved incident.
	_, err = b.env.Emulators.SQS().SendMessage(ctx, sendInput(b.q.URL, aws.ToString(msgs[0].Body), msgs[0].MessageAttributes))
	require.NoError(t, err)
	require.Empty(t, b.invoke(t, b.receive(t, 1, 5*time.Second)))
	_, effects, _ = b.handler.counts()
	require.Equal(t, 1, effects["evt_replay"])
}

// A lost attestation heals: the side effect is recorded once, the message
// is retried, and the redelivery (row completed) attests without running
// the handler again.
func TestFailedAttestationIsRetriedWithoutRepeatingTheSideEffect(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	store := b.env.Incidents()
	b.rebuild(t, func(_ *consume.Config, d *consume.Deps) { d.Incidents = store })
	now := time.Now().UTC()
	id := incident.ID("evt_attest", topicName)
	_, err := store.Save(ctx, incident.Incident{
		ID: id, EventID: "evt_attest", TenantID: "acme", Topic: topicName, SourceQueue: b.q.DLQARN,
		ErrorCode: "subscriber_rejected", ErrorMessage: "401", RetryCount: 1, ReplayCount: 1,
		Body:   incident.Body{Inline: envelopeJSON("evt_attest", "", map[string]any{"order": "evt_attest"})},
		Status: incident.StatusRetrying, CreatedAt: now, UpdatedAt: now, LastFailedAt: now, ReplayedAt: now,
		History: []incident.Change{{To: incident.StatusOpen, By: incident.ActorArchiver, At: now}, {From: incident.StatusOpen, To: incident.StatusRetrying, By: "ops", At: now}},
	})
	require.NoError(t, err)
	b.publish(t, "evt_attest", "")
	// The replay's copy: the original message is gone (dead-lettered), the
	// replay sends the canonical envelope with replayOf.
	original := b.receive(t, 1, 5*time.Second)
	require.NoError(t, b.ack(original, nil))
	rec, _, err := b.events.Load(ctx, key("evt_attest"))
	require.NoError(t, err)
	m, err := rec.Message(topicName)
	require.NoError(t, err)
	m.ReplayOf = id
	require.NoError(t, (&sqsqueue.Sender{Client: b.env.Emulators.SQS(), URLs: map[string]string{topicName: b.q.URL}}).Send(ctx, m))
	msgs := b.receive(t, 1, 5*time.Second)
	require.Len(t, msgs, 1)

	remove := b.env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Resource: b.env.Resources.IncidentsTable})
	failed := b.invoke(t, msgs)
	remove()
	require.True(t, failed[aws.ToString(msgs[0].MessageId)], "the attestation failure is retried")
	require.Equal(t, outbox.StatusCompleted, b.row(t, "evt_attest").Status, "the side effect is recorded")
	inc, err := store.Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, incident.StatusRetrying, inc.Status)

	require.Empty(t, b.invoke(t, b.receive(t, 1, 5*time.Second)))
	inc, err = store.Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, incident.StatusResolved, inc.Status)
	calls, _, _ := b.handler.counts()
	require.Equal(t, 1, calls["evt_attest"], "the redelivery only attested")
}
