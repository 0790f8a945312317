package consume_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
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

// A completion write that keeps failing for the whole invocation leaves the
// row processing (the side effect happened, the message is acknowledged so
// it does not run twice);
// the sweeper settles such rows later (see the sweep package's tests).
func TestCompletionWriteLostLeavesTheRowToTheSweeper(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.publish(t, "evt_cl", "")
	b.env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "UpdateItem", Match: completionWrite})
	require.Empty(t, b.invoke(t, b.receive(t, 1, 5*time.Second)), "acknowledged: the side effect happened")
	_, effects, _ := b.handler.counts()
	require.Equal(t, 1, effects["evt_cl"])
	r := b.row(t, "evt_cl")
	require.Equal(t, outbox.StatusProcessing, r.Status)
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
