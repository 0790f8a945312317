package consume_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/sqsqueue"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// Issue test 1: a batch of 10 where messages 3 and 7 fail transiently
// reports exactly those two; the others are completed and never come back.
func TestPartialBatchFailureReportsExactlyTheFailedMessages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 10 {
		b.publish(t, fmt.Sprintf("evt_pb_%d", i), "")
	}
	msgs := b.receive(t, 10, 5*time.Second)
	require.Len(t, msgs, 10)
	third, seventh := eventIDOf(t, msgs[2]), eventIDOf(t, msgs[6])
	b.handler.fail = func(m consume.Message, call int) error {
		if (m.Event.ID == third || m.Event.ID == seventh) && call == 1 {
			return errors.New("downstream answered 503")
		}
		return nil
	}

	failed := b.invoke(t, msgs)
	require.Equal(t, map[string]bool{aws.ToString(msgs[2].MessageId): true, aws.ToString(msgs[6].MessageId): true}, failed)
	for _, m := range msgs {
		id := eventIDOf(t, m)
		r := b.row(t, id)
		if id == third || id == seventh {
			require.Equal(t, outbox.StatusEnqueued, r.Status, id)
			require.Equal(t, "downstream answered 503", r.LastError, id)
			require.Empty(t, r.LeaseOwner)
			continue
		}
		require.Equal(t, outbox.StatusCompleted, r.Status, id)
	}

	// Only the two come back (after their one-second backoff), and their
	// retry completes them.
	back := b.receive(t, 10, 4*time.Second)
	got := map[string]bool{}
	for _, m := range back {
		got[eventIDOf(t, m)] = true
		require.Equal(t, "2", m.Attributes["ApproximateReceiveCount"])
	}
	require.Equal(t, map[string]bool{third: true, seventh: true}, got)
	require.Empty(t, b.invoke(t, back))
	_, effects, _ := b.handler.counts()
	require.Len(t, effects, 10)
	for id, n := range effects {
		require.Equal(t, 1, n, id)
	}
	visible, inflight := b.env.QueueDepth(context.Background(), b.q.URL)
	require.Zero(t, visible+inflight)

	lines := b.metrics.JSONLines(t)
	require.Equal(t, 10.0, sum(lines, consume.MetricProcessed))
	require.Equal(t, 2.0, sum(lines, consume.MetricRetried))
	require.Equal(t, 2.0, sum(lines, consume.MetricFailed))
	for _, l := range lines {
		require.Equal(t, topicName, l[consume.DimensionTopic])
	}
}

// Issue test 2: the handler outlives the visibility timeout, SQS redelivers
// the message meanwhile, and the side effect still happens once.
func TestHandlerOutlivingTheVisibilityTimeoutRunsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, func(tp *topology.Topic) {
		tp.VisibilityTimeout = time.Second
		tp.ConsumerTimeout = 4 * time.Second
	})
	b.publish(t, "evt_slow", "")
	first := b.receive(t, 1, 5*time.Second)
	require.Len(t, first, 1)

	b.handler.hold = func(ctx context.Context, _ consume.Message, call int) {
		if call == 1 {
			select {
			case <-ctx.Done():
			case <-time.After(2500 * time.Millisecond):
			}
		}
	}
	done := make(chan map[string]bool, 1)
	errc := make(chan error, 1)
	go func() {
		failed, err := b.tryInvoke(first)
		errc <- err
		done <- failed
	}()

	// The visibility timeout (1 s) lapses while the handler still runs.
	second := b.receive(t, 1, 3*time.Second)
	require.Len(t, second, 1, "SQS redelivers the message while the first delivery is still running")
	require.Equal(t, aws.ToString(first[0].MessageId), aws.ToString(second[0].MessageId))
	require.Equal(t, "2", second[0].Attributes["ApproximateReceiveCount"])
	failed := b.invoke(t, second)
	require.True(t, failed[aws.ToString(second[0].MessageId)], "the redelivery finds the row in progress and is retried later")
	calls, _, _ := b.handler.counts()
	require.Equal(t, 1, calls["evt_slow"], "the redelivery did not run the handler")

	require.NoError(t, <-errc)
	require.Empty(t, <-done, "the first delivery completes")
	require.Equal(t, outbox.StatusCompleted, b.row(t, "evt_slow").Status)

	// Whatever copy is left comes back after the first lease and is
	// acknowledged without running the handler again.
	for _, m := range b.receive(t, 1, 8*time.Second) {
		require.Empty(t, b.invoke(t, []sqstypes.Message{m}))
	}
	calls, effects, _ := b.handler.counts()
	require.Equal(t, 1, calls["evt_slow"])
	require.Equal(t, 1, effects["evt_slow"])
	visible, inflight := b.env.QueueDepth(context.Background(), b.q.URL)
	require.Zero(t, visible+inflight, "nothing left on the queue")
	require.Empty(t, b.env.ReceiveAll(context.Background(), b.q.DLQURL, 1, 0))
}

// Issue test 3: a poison message is in the DLQ with its reason at once,
// and the rest of its batch succeeds.
func TestPoisonMessagesGoToTheDLQAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for i := range 4 {
		b.publish(t, fmt.Sprintf("evt_ok_%d", i), "")
	}
	b.publish(t, "evt_rejected", "")
	b.handler.fail = func(m consume.Message, _ int) error {
		if m.Event.ID == "evt_rejected" {
			return consume.Permanent("subscriber_rejected", errors.New("subscriber answered 410 Gone"))
		}
		return nil
	}
	// Two messages no retry can fix: a body that is not an envelope, and an
	// envelope whose eventId attribute disagrees with it.
	sq := b.env.Emulators.SQS()
	garbage := sqsqueue.Attributes(outbox.Message{Topic: topicName, EventID: "evt_garbage", TenantID: "acme", Type: "order.created"})
	_, err := sq.SendMessage(ctx, sendInput(b.q.URL, `{"id": "evt_garbage", "payload": "not an envelope"`, garbage))
	require.NoError(t, err)
	mismatch := sqsqueue.Attributes(outbox.Message{Topic: topicName, EventID: "evt_other", TenantID: "acme", Type: "order.created"})
	_, err = sq.SendMessage(ctx, sendInput(b.q.URL, string(envelopeJSON("evt_claimed", "", map[string]any{"k": 1})), mismatch))
	require.NoError(t, err)

	msgs := b.receive(t, 7, 5*time.Second)
	require.Len(t, msgs, 7)
	require.Empty(t, b.invoke(t, msgs), "poison is acknowledged, never retried")
	for i := range 4 {
		require.Equal(t, outbox.StatusCompleted, b.row(t, fmt.Sprintf("evt_ok_%d", i)).Status)
	}
	r := b.row(t, "evt_rejected")
	require.Equal(t, outbox.StatusEnqueued, r.Status, "the DLQ archiver marks it dlq when it archives")
	require.Equal(t, "subscriber_rejected: subscriber answered 410 Gone", r.LastError)

	dead := b.env.ReceiveAll(ctx, b.q.DLQURL, 3, 0)
	require.Len(t, dead, 3, "in the DLQ at once, not after maxReceiveCount")
	byEvent := map[string]sqstypes.Message{}
	for _, m := range dead {
		byEvent[eventIDOf(t, m)] = m
		failedAt, err := time.Parse(time.RFC3339, aws.ToString(m.MessageAttributes[outbox.AttrFailedAt].StringValue))
		require.NoError(t, err)
		require.WithinDuration(t, time.Now(), failedAt, time.Minute)
		require.NotEmpty(t, aws.ToString(m.MessageAttributes[outbox.AttrErrorMessage].StringValue))
		require.Equal(t, "acme", aws.ToString(m.MessageAttributes[outbox.AttrTenantID].StringValue), "original attributes are kept")
		require.Equal(t, topicName, aws.ToString(m.MessageAttributes[outbox.AttrTopic].StringValue))
	}
	code := func(id string) string {
		return aws.ToString(byEvent[id].MessageAttributes[outbox.AttrErrorCode].StringValue)
	}
	require.Equal(t, "invalid_envelope", code("evt_garbage"))
	require.Equal(t, `{"id": "evt_garbage", "payload": "not an envelope"`, aws.ToString(byEvent["evt_garbage"].Body), "the body is unchanged")
	require.Equal(t, consume.CodeEventIDMismatch, code("evt_other"))
	require.Equal(t, "subscriber_rejected", code("evt_rejected"))
	require.Contains(t, aws.ToString(byEvent["evt_rejected"].MessageAttributes[outbox.AttrErrorMessage].StringValue), "410 Gone")

	visible, inflight := b.env.QueueDepth(ctx, b.q.URL)
	require.Zero(t, visible+inflight, "a poison message never blocks the queue")
	lines := b.metrics.JSONLines(t)
	require.Equal(t, 3.0, sum(lines, consume.MetricPoisoned))
	require.Equal(t, 4.0, sum(lines, consume.MetricProcessed))
	require.Zero(t, sum(lines, consume.MetricRetried))
}

// Issue test 4: a transient failure makes the message visible again only
// after the computed delay (1 s, 2 s for a 1 s base); on its last receive
// (maxReceiveCount) it goes to the DLQ at once, with why, instead of
// waiting out another backoff for SQS's redrive; the outbox row says why.
func TestTransientFailureBacksOffThenRedrives(t *testing.T) {
	t.Parallel()
	b := setup(t, func(tp *topology.Topic) { tp.MaxReceiveCount = 3 })
	ctx := context.Background()
	b.publish(t, "evt_flaky", "")
	b.handler.fail = func(consume.Message, int) error { return errors.New("subscriber unavailable") }

	msgs := b.receive(t, 1, 5*time.Second)
	for receive := 1; receive <= 3; receive++ {
		require.Len(t, msgs, 1, "receive %d", receive)
		require.Equal(t, fmt.Sprint(receive), msgs[0].Attributes["ApproximateReceiveCount"])
		start := time.Now()
		require.Equal(t, receive < 3, b.invoke(t, msgs)[aws.ToString(msgs[0].MessageId)], "reported failed (retried) until the last receive")
		want := time.Second << (receive - 1)
		if receive == 3 {
			break
		}
		msgs = b.receive(t, 1, want+5*time.Second)
		// The queue's own visibility timeout is 30 s: only the runtime's
		// visibility change brings it back this soon, and never before the
		// delay (SQS counts whole seconds; allow its timer a few ms).
		seen := time.Since(start)
		require.GreaterOrEqual(t, seen, want-20*time.Millisecond, "receive %d came back after %s, before its %s backoff", receive, seen, want)
		require.Less(t, seen, want+5*time.Second)
	}
	require.Equal(t, 2, b.env.Calls.Count("SQS", "ChangeMessageVisibilityBatch"), "no backoff after the last receive")

	// The third receive was the last: dead-lettered at once, with why.
	dead := b.env.ReceiveAll(ctx, b.q.DLQURL, 1, 2*time.Second)
	require.Len(t, dead, 1)
	require.Equal(t, "evt_flaky", eventIDOf(t, dead[0]))
	require.Equal(t, consume.CodeMaxReceives, aws.ToString(dead[0].MessageAttributes[outbox.AttrErrorCode].StringValue))
	require.Equal(t, "gave up after 3 receives; last: subscriber unavailable", aws.ToString(dead[0].MessageAttributes[outbox.AttrErrorMessage].StringValue))
	require.Empty(t, b.receive(t, 1, 2*time.Second), "and gone from the queue")
	r := b.row(t, "evt_flaky")
	require.Equal(t, "max_receives_exceeded: gave up after 3 receives; last: subscriber unavailable", r.LastError, "the row says why")
	require.Equal(t, outbox.StatusEnqueued, r.Status)
	calls, effects, _ := b.handler.counts()
	require.Equal(t, 3, calls["evt_flaky"])
	require.Zero(t, effects["evt_flaky"])
}
