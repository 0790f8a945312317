package sqsqueue_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/sqsqueue"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/topology"
)

func TestVisibilitySeconds(t *testing.T) {
	t.Parallel()
	cases := map[time.Duration]int32{
		0: 0, -time.Second: 0, time.Millisecond: 1, time.Second: 1, 1500 * time.Millisecond: 2,
		7 * time.Second: 7, 13 * time.Hour: 43200,
	}
	for d, want := range cases {
		require.Equal(t, want, sqsqueue.VisibilitySeconds(d), d.String())
	}
}

func str(v string) events.SQSMessageAttribute {
	return events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(v), StringListValues: []string{}, BinaryListValues: [][]byte{}}
}

// A dead letter keeps the body and the platform's attributes, adds the
// reason, and fits SQS's ten-attribute limit by dropping foreign ones.
func TestDeadLetterKeepsTheMessageAndAddsTheReason(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t)
	ctx := context.Background()
	q := env.Resources.Queues[topology.Notifications] // a standard topic
	src := &sqsqueue.Source{Client: env.SQS, URL: q.URL, DLQURL: q.DLQURL}
	attrs := map[string]events.SQSMessageAttribute{
		outbox.AttrEventID: str("evt_1"), outbox.AttrTenantID: str("acme"), outbox.AttrType: str("stripe.invoice.paid"),
		outbox.AttrTopic: str(topology.Notifications), outbox.AttrReplayOf: str("inc_1"),
		// A stale reason from an earlier trip through the DLQ is replaced.
		outbox.AttrErrorCode: str("old_code"),
	}
	for i := range 5 {
		attrs[fmt.Sprintf("x-foreign-%d", i)] = str("v")
	}
	failedAt := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	msg := events.SQSMessage{MessageId: "m-1", Body: `{"id":"evt_1"}`, MessageAttributes: attrs}
	require.NoError(t, src.DeadLetter(ctx, msg, consume.Reason{Code: "subscriber_rejected", Message: "HTTP 410\x00 Gone", Summary: "HTTP 410 (answer: 4 bytes)", FailedAt: failedAt}))

	got := env.ReceiveAll(ctx, q.DLQURL, 1, time.Second)
	require.Len(t, got, 1)
	m := got[0]
	require.Equal(t, `{"id":"evt_1"}`, aws.ToString(m.Body))
	require.Len(t, m.MessageAttributes, 10)
	for _, k := range []string{outbox.AttrEventID, outbox.AttrTenantID, outbox.AttrType, outbox.AttrTopic, outbox.AttrReplayOf} {
		require.Equal(t, aws.ToString(attrs[k].StringValue), aws.ToString(m.MessageAttributes[k].StringValue), k)
	}
	require.Equal(t, "subscriber_rejected", aws.ToString(m.MessageAttributes[outbox.AttrErrorCode].StringValue))
	require.Equal(t, "HTTP 410\uFFFD Gone", aws.ToString(m.MessageAttributes[outbox.AttrErrorMessage].StringValue), "characters SQS rejects are replaced")
	require.Equal(t, "HTTP 410 (answer: 4 bytes)", aws.ToString(m.MessageAttributes[outbox.AttrErrorSummary].StringValue))
	require.Equal(t, "2026-12-02T12:00:00Z", aws.ToString(m.MessageAttributes[outbox.AttrFailedAt].StringValue))
	foreign := 0
	for k := range m.MessageAttributes {
		if strings.HasPrefix(k, "x-foreign-") {
			foreign++
		}
	}
	require.Equal(t, 1, foreign, "the platform's six, the reason's four, one foreign")

	require.Error(t, (&sqsqueue.Source{Client: env.SQS, URL: q.URL}).DeadLetter(ctx, msg, consume.Reason{}), "no DLQ configured")
}

// Delay reports the entries SQS refused, by message id.
func TestDelayReportsRefusedEntries(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t)
	ctx := context.Background()
	q := env.Resources.Queues[topology.Notifications] // a standard topic
	src := &sqsqueue.Source{Client: env.SQS, URL: q.URL, DLQURL: q.DLQURL}
	var ds []consume.Delay
	for i := range 12 {
		ds = append(ds, consume.Delay{MessageID: fmt.Sprintf("m-%d", i), ReceiptHandle: "not-a-receipt-handle", Visibility: time.Second})
	}
	err := src.Delay(ctx, ds)
	require.Error(t, err)
	require.Contains(t, err.Error(), "m-11")
	require.Equal(t, 2, env.Calls.Count("SQS", "ChangeMessageVisibilityBatch"), "ten entries per call")
}

// A throttled ChangeMessageVisibilityBatch is tried again within the call:
// the message gets its short retry delay instead of staying invisible for
// the queue's whole visibility timeout (reliability scenario 4's p99).
func TestDelayRetriesAThrottledCall(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t)
	ctx := context.Background()
	q := env.Resources.Queues[topology.Notifications] // a standard topic
	src := &sqsqueue.Source{Client: env.SQS, URL: q.URL, DLQURL: q.DLQURL}
	_, err := env.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String(`{"id":"evt_cmv"}`)})
	require.NoError(t, err)
	got := env.ReceiveAll(ctx, q.URL, 1, 5*time.Second)
	require.Len(t, got, 1)

	env.Faults.Add(awslocal.Fault{Service: "SQS", Operation: "ChangeMessageVisibilityBatch", Times: 2, Err: awslocal.Throttled()})
	require.NoError(t, src.Delay(ctx, []consume.Delay{{MessageID: aws.ToString(got[0].MessageId), ReceiptHandle: aws.ToString(got[0].ReceiptHandle), Visibility: 0}}))
	require.Equal(t, 2, env.Faults.Injected("SQS.ChangeMessageVisibilityBatch"))
	require.Equal(t, 3, env.Calls.Count("SQS", "ChangeMessageVisibilityBatch"), "two throttled, the third sets the delay")

	// Visible again now (its delay was 0), long before the queue's
	// visibility timeout.
	again := env.ReceiveAndDelete(ctx, q.URL, 1, 5*time.Second)
	require.Len(t, again, 1)
	require.Equal(t, aws.ToString(got[0].MessageId), aws.ToString(again[0].MessageId))
}
