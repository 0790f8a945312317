package replay_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/replay"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// A replayed message whose handler ran but whose completion the events
// table would not take within the invocation leaves its row processing
// under a lapsed lease while a copy of the message carries the completion
// (consume, carry.go: up to 8 hops, about 21 minutes). The sweeper
// reopens the incident after StuckAfter (15 minutes), and the operator,
// told the replay was not confirmed, replays it again: that replay must
// not run the handler a second time. Before, the replay saw a processing
// row without a live lease, re-sent the event and reset the row, so the
// copy's completion found the row moved on and was dropped while the new
// message ran the side effect again.
//
// Completions travel in copies on standard topics only (a FIFO topic
// acknowledges and leaves the row to the sweeper), so billing runs here as
// a standard topic.
func TestAReplayDoesNotRunAgainWhatACarriedCompletionIsRecording(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	top := topology.Default()
	for i := range top.Topics {
		if top.Topics[i].Name == topic {
			top.Topics[i].FIFO = false
		}
	}
	require.NoError(t, top.Validate())
	p := setupPlatform(t, awslocaltest.WithTopology(top))
	q := p.env.Queue(topic)

	p.broken.Store(true)
	p.publish(t, "evt_carry", []byte(`{"invoice":"in_9"}`))
	p.consume(t, 1)
	p.archive(t, 1)
	inc := p.incident(t, "evt_carry")
	require.Equal(t, incident.StatusOpen, inc.Status)

	// The subscriber is fixed and the operator replays; the consumer runs
	// the handler, but no completion write lands within its invocation.
	p.broken.Store(false)
	sum, err := p.replay.Replay(ctx, replay.Request{IncidentIDs: []string{inc.ID}, Actor: "ops@example.com"})
	require.NoError(t, err)
	require.Equal(t, []string{inc.ID}, sum.Replayed)
	stop := p.env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "UpdateItem", Match: func(in any) bool {
		u, ok := in.(*dynamodb.UpdateItemInput)
		return ok && strings.HasPrefix(aws.ToString(u.UpdateExpression), "SET #s = :completed")
	}})
	msgs := p.env.ReceiveAll(ctx, q.URL, 1, 10*time.Second)
	require.Len(t, msgs, 1)
	ictx, cancel := context.WithTimeout(ctx, 3*time.Second)
	resp, err := p.consumer.Handle(ictx, lambdalocal.SQSEvent(q.ARN, msgs))
	deadline, _ := ictx.Deadline()
	cancel()
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures, "acknowledged: the side effect happened")
	_, err = p.env.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: msgs[0].ReceiptHandle})
	require.NoError(t, err)
	require.Len(t, p.handled, 1)
	require.Equal(t, outbox.StatusProcessing, p.row(t, "evt_carry").Status, "the completion travels in a copy")
	time.Sleep(time.Until(deadline.Add(100 * time.Millisecond))) // the consumer's lease has ended

	// StuckAfter later the sweeper reopens the unconfirmed replay, and the
	// operator replays it again.
	_, reopened, err := incident.ReopenStuck(ctx, p.incidents, inc.ID, time.Now().Add(incident.DefaultStuckAfter+time.Minute), incident.DefaultStuckAfter)
	require.NoError(t, err)
	require.True(t, reopened)
	again, err := p.replay.Replay(ctx, replay.Request{IncidentIDs: []string{inc.ID}, Actor: "ops@example.com", Note: "not confirmed, again"})
	require.NoError(t, err)
	require.Equal(t, map[string]int{replay.SkipInProgress: 1}, again.SkippedByReason, "%+v", again)

	// The table takes writes again: whatever is on the queue (the copy,
	// and a second replay if one was sent) is delivered.
	stop()
	for drain := time.Now().Add(20 * time.Second); time.Now().Before(drain); {
		msgs := p.env.ReceiveAll(ctx, q.URL, 10, time.Second)
		if len(msgs) == 0 {
			if p.row(t, "evt_carry").Status != outbox.StatusProcessing {
				break
			}
			continue
		}
		resp, err := p.consumer.Handle(ctx, lambdalocal.SQSEvent(q.ARN, msgs))
		require.NoError(t, err)
		require.Empty(t, resp.BatchItemFailures)
		for _, m := range msgs {
			_, err := p.env.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: m.ReceiptHandle})
			require.NoError(t, err)
		}
	}
	p.mu.Lock()
	handled := len(p.handled)
	p.mu.Unlock()
	require.Equal(t, 1, handled, "the replayed side effect ran once")
	require.Equal(t, outbox.StatusCompleted, p.row(t, "evt_carry").Status, "the carried completion landed")
	require.Equal(t, incident.StatusResolved, p.incident(t, "evt_carry").Status, "the replay is attested")
}
