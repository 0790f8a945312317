package consume_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/sqsqueue"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// Issue test 5: in a FIFO batch, a failure in group A stops the rest of
// group A (reported failed, never run); group B proceeds, and a poison
// message in B does not stop B.
//
// The batch is built from the stored events (the exact interleaving under
// test; a receive from the local SQS holds several messages per group too,
// as SQS's do); the outbox rows, the DLQ and the visibility changes are
// real.
func TestFIFOFailureStopsItsGroupOnly(t *testing.T) {
	t.Parallel()
	b := setup(t, func(tp *topology.Topic) { tp.FIFO = true })
	ctx := context.Background()
	order := []grouped{
		{"evt_a1", "A"}, {"evt_b1", "B"}, {"evt_a2", "A"}, {"evt_b2", "B"}, {"evt_a3", "A"}, {"evt_b3", "B"},
	}
	ev := b.fifoEvent(t, order)
	b.handler.fail = func(m consume.Message, _ int) error {
		switch m.Event.ID {
		case "evt_a2":
			return errors.New("subscriber answered 503")
		case "evt_b2":
			return consume.Permanent("subscriber_rejected", errors.New("subscriber answered 400"))
		}
		return nil
	}

	dctx, cancel := context.WithTimeout(ctx, b.topic.ConsumerTimeout)
	defer cancel()
	resp, err := b.consumer.Handle(dctx, ev)
	require.NoError(t, err)
	var reported []string
	for _, f := range resp.BatchItemFailures {
		reported = append(reported, f.ItemIdentifier)
	}
	require.Equal(t, []string{"msg-evt_a2", "msg-evt_a3"}, reported, "the failed message and the rest of its group, in order")

	calls, effects, runs := b.handler.counts()
	require.Zero(t, calls["evt_a3"], "nothing after a failure in group A runs")
	for _, id := range []string{"evt_a1", "evt_a2", "evt_b1", "evt_b2", "evt_b3"} {
		require.Equal(t, 1, calls[id], id)
	}
	require.Equal(t, map[string]int{"evt_a1": 1, "evt_b1": 1, "evt_b3": 1}, effects)
	before := func(x, y string) bool { return slices.Index(runs, x) < slices.Index(runs, y) }
	require.True(t, before("evt_a1", "evt_a2"), "group A in order: %v", runs)
	require.True(t, before("evt_b1", "evt_b2") && before("evt_b2", "evt_b3"), "group B in order: %v", runs)

	for _, id := range []string{"evt_a1", "evt_b1", "evt_b3"} {
		require.Equal(t, outbox.StatusCompleted, b.row(t, id).Status, id)
	}
	require.Equal(t, "subscriber answered 503", b.row(t, "evt_a2").LastError)
	a3 := b.row(t, "evt_a3")
	require.Equal(t, outbox.StatusEnqueued, a3.Status, "never claimed")
	require.Empty(t, a3.LastError)

	dead := b.env.ReceiveAll(ctx, b.q.DLQURL, 1, time.Second)
	require.Len(t, dead, 1, "the poison message of group B is in the FIFO DLQ")
	require.Equal(t, "evt_b2", eventIDOf(t, dead[0]))
	require.Equal(t, "B", dead[0].Attributes["MessageGroupId"], "it keeps its group")
	require.Equal(t, "subscriber_rejected", aws.ToString(dead[0].MessageAttributes[outbox.AttrErrorCode].StringValue))
}

// grouped is a message of a FIFO group.
type grouped struct{ id, group string }

// fifoEvent publishes each event and builds the SQS event a FIFO receive
// of them would be, in order: each message as stored, in its group, with
// its sequence number.
func (b *bundle) fifoEvent(t *testing.T, order []grouped) events.SQSEvent {
	t.Helper()
	var ev events.SQSEvent
	for i, o := range order {
		b.publish(t, o.id, o.group)
		rec, _, err := b.events.Load(context.Background(), key(o.id))
		require.NoError(t, err)
		m, err := rec.Message(topicName)
		require.NoError(t, err)
		attrs := map[string]events.SQSMessageAttribute{}
		for k, v := range sqsqueue.Attributes(m) {
			attrs[k] = events.SQSMessageAttribute{DataType: aws.ToString(v.DataType), StringValue: v.StringValue}
		}
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId: "msg-" + o.id, ReceiptHandle: "receipt-" + o.id, Body: string(m.Body), MessageAttributes: attrs,
			Attributes: map[string]string{
				"MessageGroupId": o.group, "ApproximateReceiveCount": "1", "SequenceNumber": strconv.Itoa(i + 1),
				"SentTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10),
			},
			EventSourceARN: b.q.ARN, EventSource: "aws:sqs",
		})
	}
	return ev
}
