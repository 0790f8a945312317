package awslocal_test

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
)

func receiveOne(t *testing.T, env *awslocaltest.Env, url string) sqstypes.Message {
	t.Helper()
	msgs := env.ReceiveAll(context.Background(), url, 1, 2*time.Second)
	require.Len(t, msgs, 1)
	return msgs[0]
}

func TestSQSRedriveToDLQ(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t, awslocaltest.WithTopology(testkit.OneTopic("redrive.test", 2, false)))
	ctx := context.Background()
	q := env.Queue("redrive.test")

	attrs, err := env.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(q.URL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
	})
	require.NoError(t, err)
	require.Equal(t, "30", attrs.Attributes["VisibilityTimeout"])
	var redrive struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
		MaxReceiveCount     any    `json:"maxReceiveCount"`
	}
	require.NoError(t, json.Unmarshal([]byte(attrs.Attributes["RedrivePolicy"]), &redrive))
	require.Equal(t, q.DLQARN, redrive.DeadLetterTargetArn)

	_, err = env.SQS.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(q.URL), MessageBody: aws.String(`{"id":"e1"}`),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			"eventId": {DataType: aws.String("String"), StringValue: aws.String("e1")},
			"attempt": {DataType: aws.String("Number"), StringValue: aws.String("1")},
		},
	})
	require.NoError(t, err)

	// Two receives that are never deleted (the consumer "fails" and the
	// visibility timeout is cut to zero), then the third receive finds the
	// message gone to the DLQ.
	for i := 1; i <= 2; i++ {
		m := receiveOne(t, env, q.URL)
		require.Equal(t, strconv.Itoa(i), m.Attributes["ApproximateReceiveCount"])
		require.Equal(t, "e1", aws.ToString(m.MessageAttributes["eventId"].StringValue))
		_, err = env.SQS.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
			QueueUrl: aws.String(q.URL), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0,
		})
		require.NoError(t, err)
	}
	require.Empty(t, env.ReceiveAll(ctx, q.URL, 1, 0))

	dead := receiveOne(t, env, q.DLQURL)
	require.Equal(t, `{"id":"e1"}`, aws.ToString(dead.Body))
	require.Equal(t, "1", aws.ToString(dead.MessageAttributes["attempt"].StringValue))
	require.Equal(t, "Number", aws.ToString(dead.MessageAttributes["attempt"].DataType))
}

func TestSQSFIFOOrderAndDeduplication(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t, awslocaltest.WithTopology(testkit.OneTopic("fifo.test", 3, true)))
	ctx := context.Background()
	q := env.Queue("fifo.test")
	require.Contains(t, q.URL, ".fifo")
	require.Contains(t, q.DLQURL, "-dlq.fifo")

	send := func(group, dedup, body string) error {
		_, err := env.SQS.SendMessage(ctx, &sqs.SendMessageInput{
			QueueUrl: aws.String(q.URL), MessageBody: aws.String(body),
			MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String(dedup),
		})
		return err
	}
	for i := range 6 {
		require.NoError(t, send("tenant-a", "a"+strconv.Itoa(i), "a"+strconv.Itoa(i)))
		require.NoError(t, send("tenant-b", "b"+strconv.Itoa(i), "b"+strconv.Itoa(i)))
	}
	// A redelivered event id is deduplicated.
	require.NoError(t, send("tenant-a", "a0", "duplicate"))
	// Content-based deduplication is off: a send without an id fails.
	_, err := env.SQS.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(q.URL), MessageBody: aws.String("no-id"), MessageGroupId: aws.String("tenant-a"),
	})
	require.Error(t, err)

	// Each group comes out in order; as in SQS one receive holds several
	// consecutive messages of a group (fauxqs alone hands out one per
	// group; the kit's script receives like SQS), and a group is locked
	// while one of its messages is in flight.
	out, err := env.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.URL), MaxNumberOfMessages: 10,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
	require.NoError(t, err)
	require.Len(t, out.Messages, 10, "ten of the twelve in one receive")
	perGroup := map[string][]string{}
	for _, m := range out.Messages {
		perGroup[m.Attributes["MessageGroupId"]] = append(perGroup[m.Attributes["MessageGroupId"]], aws.ToString(m.Body))
	}
	require.Equal(t, []string{"a0", "a1", "a2", "a3", "a4"}, perGroup["tenant-a"], "consecutive, in order")
	require.Equal(t, []string{"b0", "b1", "b2", "b3", "b4"}, perGroup["tenant-b"])
	require.Empty(t, env.ReceiveAll(ctx, q.URL, 10, 0), "both groups are locked while their messages are in flight")
	for _, m := range out.Messages {
		_, err := env.SQS.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(q.URL), ReceiptHandle: m.ReceiptHandle})
		require.NoError(t, err)
	}
	got := map[string][]string{}
	for range 12 {
		msgs := env.ReceiveAll(ctx, q.URL, 10, 0)
		require.NotEmpty(t, msgs, "got %v so far", got)
		for _, m := range msgs {
			group := m.Attributes["MessageGroupId"]
			got[group] = append(got[group], aws.ToString(m.Body))
			_, err := env.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: m.ReceiptHandle})
			require.NoError(t, err)
		}
		if len(got["tenant-a"])+len(got["tenant-b"]) == 12 {
			break
		}
	}
	require.Equal(t, []string{"a0", "a1", "a2", "a3", "a4", "a5"}, got["tenant-a"])
	require.Equal(t, []string{"b0", "b1", "b2", "b3", "b4", "b5"}, got["tenant-b"])
	require.Empty(t, env.ReceiveAll(ctx, q.URL, 1, 0))
}

func TestSQSLongPollAndVisibility(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t, awslocaltest.WithTopology(testkit.OneTopic("poll.test", 5, false)))
	ctx := context.Background()
	q := env.Queue("poll.test")

	// A long poll returns as soon as a message arrives.
	got := make(chan []sqstypes.Message, 1)
	start := time.Now()
	go func() {
		out, err := env.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.URL), WaitTimeSeconds: 10})
		if err != nil {
			t.Errorf("receive: %v", err)
		}
		got <- out.Messages
	}()
	time.Sleep(200 * time.Millisecond)
	_, err := env.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String("hello")})
	require.NoError(t, err)
	var msgs []sqstypes.Message
	select {
	case msgs = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("long poll did not return")
	}
	require.Len(t, msgs, 1)
	require.Less(t, time.Since(start), 3*time.Second)

	visible, inflight := env.QueueDepth(ctx, q.URL)
	require.Equal(t, 0, visible)
	require.Equal(t, 1, inflight)
	require.Empty(t, env.ReceiveAll(ctx, q.URL, 1, 0), "in flight for the 30 s visibility timeout")

	_, err = env.SQS.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(q.URL), ReceiptHandle: msgs[0].ReceiptHandle, VisibilityTimeout: 0,
	})
	require.NoError(t, err)
	visible, inflight = env.QueueDepth(ctx, q.URL)
	require.Equal(t, 1, visible)
	require.Equal(t, 0, inflight)

	m := receiveOne(t, env, q.URL)
	require.Equal(t, "hello", aws.ToString(m.Body))
	require.Equal(t, "2", m.Attributes["ApproximateReceiveCount"])
	_, err = env.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: m.ReceiptHandle})
	require.NoError(t, err)
	visible, inflight = env.QueueDepth(ctx, q.URL)
	require.Zero(t, visible+inflight)
}

func TestSNSPublishToQueue(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t, awslocaltest.WithTopology(testkit.OneTopic("alerts.test", 5, false)))
	ctx := context.Background()
	q := env.Queue("alerts.test")

	topic, err := env.SNS.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(env.Prefix + "-alerts")})
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = env.SNS.DeleteTopic(context.Background(), &sns.DeleteTopicInput{TopicArn: topic.TopicArn})
	})
	_, err = env.SNS.Subscribe(ctx, &sns.SubscribeInput{
		TopicArn: topic.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(q.ARN),
		Attributes: map[string]string{"RawMessageDelivery": "true"},
	})
	require.NoError(t, err)
	_, err = env.SNS.Publish(ctx, &sns.PublishInput{TopicArn: topic.TopicArn, Message: aws.String("dlq depth 3"), Subject: aws.String("alarm")})
	require.NoError(t, err)

	m := receiveOne(t, env, q.URL)
	require.Equal(t, "dlq depth 3", aws.ToString(m.Body))
	require.Equal(t, 1, env.Calls.Count("SNS", "Publish"))
}

func TestCloseLeavesNoFauxqsProcess(t *testing.T) {
	t.Parallel()
	emu, err := awslocal.Start(context.Background(), awslocal.Options{})
	require.NoError(t, err)
	pid := emu.FauxqsPID()
	require.NoError(t, syscall.Kill(pid, 0), "fauxqs is running")

	// It works before Close...
	_, err = emu.SQS().ListQueues(context.Background(), &sqs.ListQueuesInput{})
	require.NoError(t, err)

	require.NoError(t, emu.Close())
	require.NoError(t, emu.Close(), "Close is idempotent")
	require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "fauxqs pid %d is gone", pid)
	require.ErrorIs(t, syscall.Kill(-pid, 0), syscall.ESRCH, "its process group is gone")
}

func TestFauxqsLocation(t *testing.T) {
	t.Parallel()
	dir, err := awslocal.FindFauxqsDir()
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(dir, "node_modules", "fauxqs", "package.json"))

	_, err = awslocal.StartFauxqs(context.Background(), awslocal.FauxqsOptions{Dir: t.TempDir()})
	require.ErrorContains(t, err, "npm ci")
}

// A ReceiveMessage whose response is lost after the emulator dequeued (the
// SDK retries and gets nothing) leaves the messages in flight; ReceiveAll
// notices the retried attempt and waits for them to come back rather than
// coming up short.
func TestReceiveAllWaitsOutMessagesALostResponseLeftInFlight(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t, awslocaltest.WithTopology(testkit.OneTopic("lost.events", 5, false)))
	ctx := context.Background()
	q := env.Queue("lost.events")
	_, err := env.SQS.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{
		QueueUrl:   aws.String(q.URL),
		Attributes: map[string]string{string(sqstypes.QueueAttributeNameVisibilityTimeout): "3"},
	})
	require.NoError(t, err)
	for i := range 2 {
		_, err := env.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String("m" + strconv.Itoa(i))})
		require.NoError(t, err)
	}

	var dropped atomic.Int32
	env.SQS = sqs.NewFromConfig(env.Config(), func(o *sqs.Options) {
		o.BaseEndpoint = env.SQS.Options().BaseEndpoint
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("loseFirstReceive",
				func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
					out, md, err := next.HandleDeserialize(ctx, in)
					if err == nil && middleware.GetOperationName(ctx) == "ReceiveMessage" && dropped.Add(1) == 1 {
						return out, md, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
					}
					return out, md, err
				}), middleware.After)
		})
	})

	msgs := env.ReceiveAll(ctx, q.URL, 2, time.Second)
	require.Len(t, msgs, 2)
	require.GreaterOrEqual(t, dropped.Load(), int32(2), "the first response was lost and the SDK retried")
	for _, m := range msgs {
		require.Equal(t, "2", m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)], "redelivered after the lost receive")
	}
	require.Zero(t, env.Calls.Count("SQS", "GetQueueAttributes"), "the kit's own queue reads are not the test's calls")
}
