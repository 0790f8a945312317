package consume_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/subscriberhealth"
)

// Issue 36 §2: every delivery attempt is kept on its outbox row by the
// outcome write the row gets anyway: when it began, how long the handler
// ran, which delivery it was, how it ended and what the subscriber
// answered (noted by the handler, kept printable).
func TestEveryDeliveryAttemptIsRecorded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.handler.hold = func(ctx context.Context, _ consume.Message, call int) {
		if call == 1 {
			consume.NoteAnswer(ctx, 503, "busy,\r\n try later")
			return
		}
		consume.NoteAnswer(ctx, 200, `{"ok":true}`)
	}
	b.handler.fail = func(_ consume.Message, call int) error {
		if call == 1 {
			return errors.New("subscriber answered 503")
		}
		return nil
	}
	b.publish(t, "evt_tried", "")
	start := time.Now()
	require.Len(t, b.invoke(t, b.receive(t, 1, 5*time.Second)), 1, "retried")
	require.Empty(t, b.invoke(t, b.receive(t, 1, 10*time.Second)), "delivered on the retry")

	row := b.row(t, "evt_tried")
	require.Equal(t, outbox.StatusCompleted, row.Status)
	got := row.DeliveryAttempts
	require.Len(t, got, 2)
	require.Equal(t, 1, got[0].N)
	require.Equal(t, outbox.DeliveryOriginal, got[0].Delivery)
	require.Equal(t, outbox.OutcomeFailed, got[0].Outcome)
	require.Equal(t, 503, got[0].Status)
	require.Equal(t, "busy,   try later", got[0].Answer, "printable")
	require.Equal(t, 2, got[1].N)
	require.Equal(t, outbox.DeliveryRetry, got[1].Delivery)
	require.Equal(t, outbox.OutcomeDelivered, got[1].Outcome)
	require.Equal(t, 200, got[1].Status)
	require.Equal(t, `{"ok":true}`, got[1].Answer)
	for _, a := range got {
		require.WithinDuration(t, start, a.At, time.Minute)
		require.GreaterOrEqual(t, a.DurationMs, int64(0))
	}
	require.True(t, got[1].At.After(got[0].At))
}

// A failure without an answer is recorded by its class: the handler's
// (NoteFailure), else the permanent failure's code.
func TestAnAttemptWithoutAnAnswerKeepsItsClass(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.handler.hold = func(ctx context.Context, m consume.Message, _ int) {
		if m.Event.ID == "evt_timeout" {
			consume.NoteFailure(ctx, "time out")
		}
	}
	b.handler.fail = func(m consume.Message, _ int) error {
		if m.Event.ID == "evt_timeout" {
			return errors.New("no answer within 10s")
		}
		return consume.Permanent("order_unknown", errors.New("no such order"))
	}
	b.publish(t, "evt_timeout", "")
	b.publish(t, "evt_refused", "")
	b.invoke(t, b.receive(t, 2, 5*time.Second))
	timeout := b.row(t, "evt_timeout").DeliveryAttempts
	require.Len(t, timeout, 1)
	require.Equal(t, outbox.OutcomeFailed, timeout[0].Outcome)
	require.Equal(t, "time_out", timeout[0].Error, "a class is one word")
	require.Zero(t, timeout[0].Status)
	refused := b.row(t, "evt_refused").DeliveryAttempts
	require.Len(t, refused, 1)
	require.Equal(t, outbox.OutcomeDeadLettered, refused[0].Outcome)
	require.Equal(t, "order_unknown", refused[0].Error)
}

// A delivery while the topic's breaker probes the subscriber (half open)
// is recorded as a probe, by an instance that knew the topic unwell.
func TestAProbeIsRecordedAsAProbe(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	store := &dynamo.Breakers{Client: b.env.DynamoDB, Table: b.env.Resources.EventsTable}
	obs, err := subscriberhealth.NewObserver(subscriberhealth.ObserverConfig{Topic: b.topic, CacheFor: time.Millisecond}, subscriberhealth.ObserverDeps{Store: store})
	require.NoError(t, err)
	b.rebuild(t, func(_ *consume.Config, d *consume.Deps) { d.Breaker = obs })
	open, err := store.Swap(ctx, subscriberhealth.Health{Topic: b.topic.Name}, subscriberhealth.Health{Topic: b.topic.Name, State: subscriberhealth.Open, Since: time.Now()})
	require.NoError(t, err)
	hold, err := obs.Hold(ctx) // this instance reads the topic open
	require.NoError(t, err)
	require.True(t, hold.Holding)
	_, err = store.Swap(ctx, open, subscriberhealth.Health{Topic: b.topic.Name, State: subscriberhealth.HalfOpen, Since: time.Now(), Reason: "probing"})
	require.NoError(t, err)
	time.Sleep(5 * time.Millisecond)

	b.publish(t, "evt_probe", "")
	require.Empty(t, b.invoke(t, b.receive(t, 1, 5*time.Second)))
	got := b.row(t, "evt_probe").DeliveryAttempts
	require.Len(t, got, 1)
	require.Equal(t, outbox.DeliveryProbe, got[0].Delivery)
	require.Equal(t, outbox.OutcomeDelivered, got[0].Outcome)
}
