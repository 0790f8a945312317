package consume_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/sqsqueue"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// completionWrite matches the consumer's "completed" UpdateItem.
func completionWrite(input any) bool {
	in, ok := input.(*dynamodb.UpdateItemInput)
	return ok && strings.HasPrefix(aws.ToString(in.UpdateExpression), "SET #s = :completed")
}

// A completion write that fails for a moment (throttling) is retried: the
// row is completed, not left processing.
func TestCompletionWriteIsRetried(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.publish(t, "evt_cw", "")
	b.env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "UpdateItem", Match: completionWrite, Times: 2})
	require.Empty(t, b.invoke(t, b.receive(t, 1, 5*time.Second)))
	require.Equal(t, 2, b.env.Faults.Injected("UpdateItem"))
	require.Equal(t, outbox.StatusCompleted, b.row(t, "evt_cw").Status)
}

// A completion write throttled more often than a few short tries cover
// still lands: it retries within the invocation's remaining time (issue 21
// item 2, reliability scenario 4's duplicate: the lost completion let the
// lease lapse and a redelivery ran the side effect again). Three tries
// were all it had before.
func TestCompletionWriteHasItsOwnBudget(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.publish(t, "evt_cb", "")
	b.env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "UpdateItem", Match: completionWrite, Times: 6})
	require.Empty(t, b.invoke(t, b.receive(t, 1, 5*time.Second)))
	require.Equal(t, 6, b.env.Faults.Injected("UpdateItem"))
	require.Equal(t, outbox.StatusCompleted, b.row(t, "evt_cb").Status)
	_, effects, _ := b.handler.counts()
	require.Equal(t, 1, effects["evt_cb"])
}

// invokeWithin is invoke with an invocation of d (a short Lambda timeout).
func (b *bundle) invokeWithin(t *testing.T, msgs []sqstypes.Message, d time.Duration) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	resp, err := b.consumer.Handle(ctx, lambdalocal.SQSEvent(b.q.ARN, msgs))
	require.NoError(t, err)
	failed, err := lambdalocal.FailedItems(msgs, resp)
	require.NoError(t, err)
	require.NoError(t, b.ack(msgs, failed))
	return failed
}

// A completion write that fails for longer than the invocation is carried
// by a copy of the message, not lost and not run again (issue 21 item 2):
// the original is acknowledged, the copy (completionOf "1/<owner>")
// records the completion as its owner without running the handler, fails
// too and carries it on ("2/<owner>"), and lands once the table takes
// writes. Before, the message was acknowledged with the row left
// processing under a lapsed lease, so a later delivery of it (an SQS
// duplicate, a failed delete) ran the side effect again.
func TestCompletionLostForAWholeInvocationTravelsInACopy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.publish(t, "evt_cc", "")
	stop := b.env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "UpdateItem", Match: completionWrite})
	orig := b.receive(t, 1, 5*time.Second)
	owner := aws.ToString(orig[0].MessageId)
	require.Empty(t, b.invokeWithin(t, orig, 3*time.Second), "acknowledged: the side effect happened")
	calls, effects, _ := b.handler.counts()
	require.Equal(t, 1, effects["evt_cc"])
	require.Equal(t, outbox.StatusProcessing, b.row(t, "evt_cc").Status)
	written := b.env.Faults.Injected("UpdateItem")
	require.Greater(t, written, 3, "retried for the whole invocation first")

	hop := func(want string) []sqstypes.Message {
		t.Helper()
		copies := b.receive(t, 1, 10*time.Second)
		require.Len(t, copies, 1, "a copy carries the completion")
		require.Equal(t, want, aws.ToString(copies[0].MessageAttributes[outbox.AttrCompletionOf].StringValue))
		require.Equal(t, "evt_cc", eventIDOf(t, copies[0]))
		return copies
	}
	// The first copy's write fails too: it carries the completion on.
	first := hop("1/" + owner)
	require.Empty(t, b.invokeWithin(t, first, 3*time.Second))
	require.Greater(t, b.env.Faults.Injected("UpdateItem"), written, "the copy tried the completion")
	second := hop("2/" + owner)
	stop()
	require.Empty(t, b.invoke(t, second))
	require.Equal(t, outbox.StatusCompleted, b.row(t, "evt_cc").Status, "the carried completion landed")
	landed := b.row(t, "evt_cc").DeliveryAttempts
	require.Len(t, landed, 1, "with the attempt it records")
	require.Equal(t, outbox.OutcomeDelivered, landed[0].Outcome)
	require.Equal(t, outbox.DeliveryOriginal, landed[0].Delivery)

	// The original delivered again (an SQS duplicate, a failed delete):
	// the row is completed, so it is acknowledged without running.
	resp, err := b.consumer.Handle(context.Background(), lambdalocal.SQSEvent(b.q.ARN, orig))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	calls2, effects, _ := b.handler.counts()
	require.Equal(t, 1, effects["evt_cc"], "the side effect ran once")
	require.Equal(t, calls["evt_cc"], calls2["evt_cc"], "no copy ran the handler")
	visible, inflight := b.env.QueueDepth(context.Background(), b.q.URL)
	require.Zero(t, visible+inflight, "nothing left to deliver")
	dead := b.env.ReceiveAll(context.Background(), b.q.DLQURL, 0, 0)
	require.Empty(t, dead, "nothing dead-lettered")
	require.Equal(t, 2.0, sum(b.metrics.JSONLines(t), consume.MetricCompletionsCarried))
	require.Equal(t, 1.0, sum(b.metrics.JSONLines(t), consume.MetricProcessed), "the copies are not processed messages")
}

// A copy whose owner no longer holds the row (completed meanwhile, settled
// by the sweeper, taken over) changes nothing and is acknowledged; a copy
// with a malformed mark is refused into the DLQ (without the mark) and
// never runs the handler.
func TestACarriedCompletionNeverRunsTheHandler(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.publish(t, "evt_cn", "")
	msgs := b.receive(t, 1, 5*time.Second)
	require.Empty(t, b.invoke(t, msgs))
	require.Equal(t, outbox.StatusCompleted, b.row(t, "evt_cn").Status)
	ctx := context.Background()
	body := aws.ToString(msgs[0].Body)
	for _, mark := range []string{"1/" + aws.ToString(msgs[0].MessageId), "1/someone-else", "0/x", "9/x", "1/", "x/y", "01/x", "1/a b"} {
		attrs := sqsqueue.Attributes(outbox.Message{Topic: topicName, Key: key("evt_cn"), EventID: "evt_cn", TenantID: "acme", Type: "order.created"})
		attrs[outbox.AttrCompletionOf] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(mark)}
		_, err := b.env.SQS.SendMessage(ctx, sendInput(b.q.URL, body, attrs))
		require.NoError(t, err)
		require.Empty(t, b.invoke(t, b.receive(t, 1, 5*time.Second)), mark)
	}
	calls, _, _ := b.handler.counts()
	require.Equal(t, 1, calls["evt_cn"], "no copy ran the handler")
	dead := b.env.ReceiveAll(ctx, b.q.DLQURL, 6, 5*time.Second)
	require.Len(t, dead, 6, "the malformed marks")
	for _, d := range dead {
		require.Equal(t, consume.CodeInvalidMessage, aws.ToString(d.MessageAttributes[outbox.AttrErrorCode].StringValue))
		require.NotContains(t, d.MessageAttributes, outbox.AttrCompletionOf)
	}
}

// A FIFO topic cannot carry a completion in a copy (it would queue behind
// its group, and SQS has no per-message delay there): the message is
// acknowledged with the row left processing, which the sweeper settles.
func TestFIFOCompletionLostLeavesTheRowToTheSweeper(t *testing.T) {
	t.Parallel()
	b := setup(t, fifoTopic)
	b.publish(t, "evt_cl", "s1")
	b.env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "UpdateItem", Match: completionWrite})
	require.Empty(t, b.invokeWithin(t, b.receive(t, 1, 5*time.Second), 3*time.Second), "acknowledged: the side effect happened")
	_, effects, _ := b.handler.counts()
	require.Equal(t, 1, effects["evt_cl"])
	require.Equal(t, outbox.StatusProcessing, b.row(t, "evt_cl").Status)
	visible, inflight := b.env.QueueDepth(context.Background(), b.q.URL)
	require.Zero(t, visible+inflight, "nothing comes back to run it again")
}

// A message whose event is past its retention (ledger item and row gone)
// is never claimed by creating a bare row: it goes to the DLQ as
// ledger_missing, where replaying the incident restores the event.
func TestMessageWithoutLedgerGoesToTheDLQ(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.publish(t, "evt_gone", "")
	for _, sk := range []string{dynamo.LedgerSK, dynamo.DispatchSK(topicName)} {
		_, err := b.env.Emulators.DynamoDB().DeleteItem(context.Background(), &dynamodb.DeleteItemInput{
			TableName: aws.String(b.env.Resources.EventsTable),
			Key: map[string]ddbtypes.AttributeValue{
				"pk": &ddbtypes.AttributeValueMemberS{Value: dynamo.EventPK(key("evt_gone"))},
				"sk": &ddbtypes.AttributeValueMemberS{Value: sk},
			},
		})
		require.NoError(t, err)
	}
	require.Empty(t, b.invoke(t, b.receive(t, 1, 5*time.Second)))
	calls, _, _ := b.handler.counts()
	require.Zero(t, calls["evt_gone"], "the handler never ran without an idempotency record")
	dead := b.env.ReceiveAll(context.Background(), b.q.DLQURL, 1, 2*time.Second)
	require.Len(t, dead, 1)
	require.Equal(t, consume.CodeLedgerMissing, aws.ToString(dead[0].MessageAttributes[outbox.AttrErrorCode].StringValue))
	_, _, err := b.events.Load(context.Background(), key("evt_gone"))
	require.Error(t, err, "no row was created without its ledger item")
}

// Two messages of one dispatch (ingest's send and the sweeper's resend
// after ingest died before marking it) arrive together. The first runs
// the handler; the second finds the row busy and comes back when the
// lease ends. The first's completion cannot be written within its
// invocation and travels in a copy, invisible for the topic's first
// backoff. The busy message must not come back before that copy: it would
// find the lease over, take the row and run the side effect again, and
// the copy would find the row taken over and drop the completion. Before,
// the busy message came back one second after the lease, the copy only
// after its delay.
func TestABusyMessageDoesNotOvertakeACarriedCompletion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.rebuild(t, func(c *consume.Config, _ *consume.Deps) {
		c.Backoff = consume.Backoff{Base: 3 * time.Second, Cap: 30 * time.Second, Jitter: -1}
	})
	ctx := context.Background()
	b.publish(t, "evt_two", "")
	first := b.receive(t, 1, 5*time.Second)
	require.Len(t, first, 1)
	attrs := sqsqueue.Attributes(outbox.Message{Topic: topicName, Key: key("evt_two"), EventID: "evt_two", TenantID: "acme", Type: "order.created"})
	_, err := b.env.SQS.SendMessage(ctx, sendInput(b.q.URL, aws.ToString(first[0].Body), attrs))
	require.NoError(t, err)
	second := b.receive(t, 1, 5*time.Second)
	require.Len(t, second, 1)

	release := make(chan struct{})
	b.handler.hold = func(_ context.Context, _ consume.Message, call int) {
		if call == 1 {
			<-release
		}
	}
	stop := b.env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "UpdateItem", Match: completionWrite})
	done := make(chan map[string]bool)
	go func() { done <- b.invokeWithin(t, first, 3*time.Second) }()
	require.Eventually(t, func() bool { return b.row(t, "evt_two").Status == outbox.StatusProcessing }, 5*time.Second, 20*time.Millisecond)
	require.Len(t, b.invoke(t, second), 1, "busy: retried after the lease")
	close(release)
	require.Empty(t, <-done, "acknowledged: the side effect happened, its completion carried")
	stop()

	// The queue delivers whatever comes back, in the order it comes back.
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); {
		msgs := b.receive(t, 10, time.Second)
		if len(msgs) > 0 {
			require.Empty(t, b.invoke(t, msgs))
		}
		if v, f := b.env.QueueDepth(ctx, b.q.URL); v+f == 0 && b.row(t, "evt_two").Status == outbox.StatusCompleted {
			break
		}
	}
	_, effects, _ := b.handler.counts()
	require.Equal(t, 1, effects["evt_two"], "the side effect ran once")
	require.Equal(t, outbox.StatusCompleted, b.row(t, "evt_two").Status)
}
