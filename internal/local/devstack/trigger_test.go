package devstack_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
)

func startStack(t *testing.T) *devstack.Stack {
	t.Helper()
	st, err := devstack.Start(context.Background(), devstack.Options{Addr: "127.0.0.1:0", Prefix: awslocal.NewPrefix(), Log: logging.Discard(), Env: envconf.FromMap(nil)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// queue creates a queue with a redrive DLQ (maxReceiveCount 2, 1 s
// visibility) that no registered function polls.
func queue(t *testing.T, st *devstack.Stack) (url, arn, dlq string) {
	t.Helper()
	ctx := context.Background()
	name := awslocal.NewPrefix()
	// The tests poll the DLQ without deleting: a short visibility timeout
	// brings a message back within their wait when a receive response is
	// lost (SQS's default 30 s is longer than the wait).
	d, err := st.Clients.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + "-dlq"), Attributes: map[string]string{"VisibilityTimeout": "1"}})
	require.NoError(t, err)
	dattrs, err := st.Clients.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: d.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{"QueueArn"}})
	require.NoError(t, err)
	q, err := st.Clients.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: map[string]string{
		"VisibilityTimeout": "1",
		"RedrivePolicy":     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":2}`, dattrs.Attributes["QueueArn"]),
	}})
	require.NoError(t, err)
	qattrs, err := st.Clients.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{"QueueArn"}})
	require.NoError(t, err)
	return aws.ToString(q.QueueUrl), qattrs.Attributes["QueueArn"], aws.ToString(d.QueueUrl)
}

func TestQueueSourceReportsPartialBatchFailures(t *testing.T) {
	t.Parallel()
	st := startStack(t)
	ctx := context.Background()
	url, arn, dlq := queue(t, st)

	var (
		mu        sync.Mutex
		handled   = map[string]int{}
		maxBatch  int
		malformed []string
	)
	// Queue everything first so the first receive can gather a batch.
	for _, body := range []string{"a", "b", "poison", "c", "d"} {
		_, err := st.Clients.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body),
			MessageAttributes: map[string]sqstypes.MessageAttributeValue{"k": {DataType: aws.String("String"), StringValue: aws.String("v")}}})
		require.NoError(t, err)
	}

	require.NoError(t, st.Register(devstack.Function{
		Name: "batch-" + awslocal.NewPrefix(),
		Handler: func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			mu.Lock()
			defer mu.Unlock()
			maxBatch = max(maxBatch, len(ev.Records))
			var resp events.SQSEventResponse
			for _, r := range ev.Records {
				// Checked after the run: require must not be called off the test goroutine.
				if r.EventSourceARN != arn || r.EventSource != "aws:sqs" || r.Attributes["ApproximateReceiveCount"] == "" || aws.ToString(r.MessageAttributes["k"].StringValue) != "v" {
					malformed = append(malformed, r.MessageId)
				}
				handled[r.Body]++
				if r.Body == "poison" {
					resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
				}
			}
			return resp, nil
		},
		Triggers: []lambdalocal.Trigger{lambdalocal.QueueSource{QueueURL: url, QueueARN: arn, BatchSize: 5, BatchWindow: 300 * time.Millisecond, MaxConcurrency: 2}},
	}))

	require.Eventually(t, func() bool {
		out, err := st.Clients.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq), WaitTimeSeconds: 1})
		return err == nil && len(out.Messages) == 1 && aws.ToString(out.Messages[0].Body) == "poison"
	}, 15*time.Second, 100*time.Millisecond, "the failed message is redriven to the DLQ after maxReceiveCount")

	mu.Lock()
	defer mu.Unlock()
	for _, b := range []string{"a", "b", "c", "d"} {
		require.Equal(t, 1, handled[b], "succeeded message %s is deleted and never redelivered", b)
	}
	require.Equal(t, 2, handled["poison"], "received maxReceiveCount times")
	require.Empty(t, malformed, "every record looks like Lambda's SQS event")
	require.Greater(t, maxBatch, 1, "the batch window gathers several messages into one invocation")
}

func TestQueueSourceFunctionErrorFailsWholeBatch(t *testing.T) {
	t.Parallel()
	st := startStack(t)
	ctx := context.Background()
	url, arn, dlq := queue(t, st)
	require.NoError(t, st.Register(devstack.Function{
		Name: "err-" + awslocal.NewPrefix(),
		Handler: func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
			return events.SQSEventResponse{}, fmt.Errorf("down")
		},
		Triggers: []lambdalocal.Trigger{lambdalocal.QueueSource{QueueURL: url, QueueARN: arn, BatchSize: 10}},
	}))
	_, err := st.Clients.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		out, err := st.Clients.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq), WaitTimeSeconds: 1})
		return err == nil && len(out.Messages) == 1
	}, 15*time.Second, 100*time.Millisecond)
}

func TestScheduleInvokesPeriodically(t *testing.T) {
	t.Parallel()
	st := startStack(t)
	got := make(chan events.EventBridgeEvent, 16)
	require.NoError(t, st.Register(devstack.Function{
		Name:     "tick-" + awslocal.NewPrefix(),
		Handler:  func(_ context.Context, ev events.EventBridgeEvent) error { got <- ev; return nil },
		Triggers: []lambdalocal.Trigger{lambdalocal.Schedule{Every: 50 * time.Millisecond}},
	}))
	for range 2 {
		select {
		case ev := <-got:
			require.Equal(t, "Scheduled Event", ev.DetailType)
			require.Equal(t, "aws.events", ev.Source)
		case <-time.After(5 * time.Second):
			t.Fatal("schedule did not fire")
		}
	}
	require.NoError(t, st.Close())
	// After Close nothing fires any more.
	for len(got) > 0 {
		<-got
	}
	time.Sleep(150 * time.Millisecond)
	require.Empty(t, got)
}

// A rule's fixed input is what the function receives, at each time the
// schedule names (a daily rule's, here a moment away).
func TestScheduleSendsItsInputAtItsTimes(t *testing.T) {
	t.Parallel()
	st := startStack(t)
	got := make(chan map[string]string, 16)
	require.NoError(t, st.Register(devstack.Function{
		Name:    "daily-" + awslocal.NewPrefix(),
		Handler: func(_ context.Context, in map[string]string) error { got <- in; return nil },
		Triggers: []lambdalocal.Trigger{lambdalocal.Schedule{
			Next:  func(after time.Time) time.Time { return after.Add(50 * time.Millisecond) },
			Input: []byte(`{"action":"daily","kind":"retention-expiry"}`),
		}},
	}))
	for range 2 {
		select {
		case in := <-got:
			require.Equal(t, map[string]string{"action": "daily", "kind": "retention-expiry"}, in)
		case <-time.After(5 * time.Second):
			t.Fatal("schedule did not fire")
		}
	}
}
