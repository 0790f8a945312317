package awslocaltest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// loseReceive drops the response of the nth ReceiveMessage attempt that
// carried messages, after the emulator handed them out: they are in flight
// with nobody holding them, as when a response is lost on the wire. The
// SDK retries the call (a 500), and the retry finds nothing.
func loseReceive(nth int32, lost *atomic.Int32) func(*middleware.Stack) error {
	var carrying atomic.Int32
	return func(stack *middleware.Stack) error {
		return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("test.loseReceive",
			func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleDeserialize(ctx, in)
				if r, ok := out.Result.(*sqs.ReceiveMessageOutput); ok && err == nil && len(r.Messages) > 0 && carrying.Add(1) == nth {
					lost.Add(int32(len(r.Messages)))
					return out, md, &smithyhttp.ResponseError{
						Response: &smithyhttp.Response{Response: &http.Response{StatusCode: http.StatusInternalServerError}},
						Err:      errors.New("response lost on the way back"),
					}
				}
				return out, md, err
			}), middleware.Before)
	}
}

// When a receive response is lost, ReceiveAll waits a visibility timeout for
// those messages to come back — and the messages it had already received
// (never deleted) come back too. It returns each message once: the lost ones
// are found, the counted ones are not counted twice (a bulk replay test once
// counted 3,130 messages for 1,050).
func TestReceiveAllCountsEachMessageOnceAfterALostResponse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := awslocaltest.NewEnv(t)
	url := env.Queue(topology.CRM).URL
	_, err := env.SQS.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"VisibilityTimeout": "2"}})
	require.NoError(t, err)
	send := func(prefix string) {
		for i := range 3 {
			_, err := env.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(fmt.Sprintf("%s-%d", prefix, i))})
			require.NoError(t, err)
		}
	}
	send("first")
	var lost atomic.Int32
	env.SQS = sqs.New(env.SQS.Options(), func(o *sqs.Options) { o.APIOptions = append(o.APIOptions, loseReceive(2, &lost)) })
	// The second batch arrives while ReceiveAll long-polls for more, and its
	// receive response is lost.
	go func() {
		time.Sleep(300 * time.Millisecond)
		send("second")
	}()
	msgs := env.ReceiveAll(ctx, url, 6, 3*time.Second)
	require.Positive(t, lost.Load(), "a response was lost")
	bodies := map[string]int{}
	for _, m := range msgs {
		bodies[aws.ToString(m.Body)]++
	}
	require.Len(t, msgs, 6, "%v", bodies)
	for _, p := range []string{"first", "second"} {
		for i := range 3 {
			require.Equal(t, 1, bodies[fmt.Sprintf("%s-%d", p, i)], "%v", bodies)
		}
	}
}

// ReceiveAndDelete deletes what it returns: a second receive finds nothing,
// even after a visibility timeout.
func TestReceiveAndDeleteLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := awslocaltest.NewEnv(t)
	url := env.Queue(topology.CRM).URL
	_, err := env.SQS.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"VisibilityTimeout": "1"}})
	require.NoError(t, err)
	for i := range 15 {
		_, err := env.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(fmt.Sprint(i))})
		require.NoError(t, err)
	}
	require.Len(t, env.ReceiveAndDelete(ctx, url, 15, 5*time.Second), 15)
	time.Sleep(1500 * time.Millisecond)
	require.Empty(t, env.ReceiveAll(ctx, url, 0, 0))
	visible, inflight := env.QueueDepth(ctx, url)
	require.Zero(t, visible+inflight)
}

// A test takes one message (left in flight), then checks that nothing else
// arrives; the check's receive loses a response and waits a visibility
// timeout for it — and the message taken first comes back meanwhile. The
// rescued check returns only what the lost response held, not the earlier
// call's message (it did, and "nothing else arrived" failed on a message
// that arrived once).
func TestReceiveAllRescueReturnsNoEarlierCallsMessages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := awslocaltest.NewEnv(t)
	url := env.Queue(topology.CRM).URL
	_, err := env.SQS.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"VisibilityTimeout": "2"}})
	require.NoError(t, err)
	send := func(body string) {
		_, err := env.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)})
		require.NoError(t, err)
	}
	send("taken")
	taken := env.ReceiveAll(ctx, url, 1, 5*time.Second)
	require.Len(t, taken, 1)

	// The second message's receive response is lost (the second receive
	// that carries messages: the first is the rescue's own find of it).
	var lost atomic.Int32
	env.SQS = sqs.New(env.SQS.Options(), func(o *sqs.Options) { o.APIOptions = append(o.APIOptions, loseReceive(1, &lost)) })
	send("later")
	msgs := env.ReceiveAll(ctx, url, 2, time.Second)
	require.Positive(t, lost.Load(), "a response was lost")
	var bodies []string
	for _, m := range msgs {
		bodies = append(bodies, aws.ToString(m.Body))
	}
	require.Equal(t, []string{"later"}, bodies, "the rescue found the lost message and returned nothing the first call had")
}
