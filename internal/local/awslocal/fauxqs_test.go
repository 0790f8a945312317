package awslocal_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
)

// TestFauxqsListensOnLoopbackOnly reads the kernel's socket table: the SQS
// emulator holds every queued event, so it must never be reachable from
// the network.
func TestFauxqsListensOnLoopbackOnly(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/net/tcp")
	}
	f, err := awslocal.StartFauxqs(context.Background(), awslocal.FauxqsOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })

	local := listeners(t, f.Port)
	require.NotEmpty(t, local, "fauxqs listens on port %d", f.Port)
	for _, addr := range local {
		require.Equal(t, "0100007F", addr, "bound to 127.0.0.1, not a wildcard or external address")
	}
}

// listeners returns the hex local addresses of TCP sockets listening on
// port (IPv4 and IPv6 tables).
func listeners(t *testing.T, port int) []string {
	t.Helper()
	var out []string
	want := fmt.Sprintf(":%04X", port)
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		raw, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(raw), "\n")[1:] {
			fields := strings.Fields(line)
			// sl local_address rem_address st ...; st 0A is LISTEN.
			if len(fields) < 4 || fields[3] != "0A" || !strings.HasSuffix(fields[1], want) {
				continue
			}
			out = append(out, strings.TrimSuffix(fields[1], want))
		}
	}
	return out
}

// fauxqs drops MessageSystemAttributes; the kit's script keeps the X-Ray
// trace header so a consumer sees AWSTraceHeader as in SQS, through a
// redrive to the DLQ too.
func TestSQSCarriesAWSTraceHeader(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t, awslocaltest.WithTopology(testkit.OneTopic("trace.test", 1, false)))
	ctx := context.Background()
	q := env.Queue("trace.test")
	const h = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	sys := map[string]sqstypes.MessageSystemAttributeValue{
		"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String(h)},
	}
	_, err := env.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String("one"), MessageSystemAttributes: sys})
	require.NoError(t, err)
	_, err = env.SQS.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.URL), Entries: []sqstypes.SendMessageBatchRequestEntry{
		{Id: aws.String("a"), MessageBody: aws.String("two"), MessageSystemAttributes: sys},
		{Id: aws.String("b"), MessageBody: aws.String("untraced")},
	}})
	require.NoError(t, err)

	msgs := env.ReceiveAll(ctx, q.URL, 3, 2*time.Second)
	require.Len(t, msgs, 3)
	for _, m := range msgs {
		if aws.ToString(m.Body) == "untraced" {
			require.NotContains(t, m.Attributes, "AWSTraceHeader")
			continue
		}
		require.Equal(t, h, m.Attributes["AWSTraceHeader"], aws.ToString(m.Body))
		_, err := env.SQS.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(q.URL), ReceiptHandle: m.ReceiptHandle})
		require.NoError(t, err)
	}
	// Received once with maxReceiveCount 1: the next receive redrives.
	require.Empty(t, env.ReceiveAll(ctx, q.URL, 1, 0))
	dead := env.ReceiveAll(ctx, q.DLQURL, 2, 2*time.Second)
	require.Len(t, dead, 2)
	for _, m := range dead {
		require.Equal(t, h, m.Attributes["AWSTraceHeader"])
	}
}

// A standard queue's sends keep their MessageGroupId (SQS fair queues
// identify tenants by it and return it on receive; fauxqs drops it), a
// send without one has none, and a redrive to the DLQ keeps it.
func TestSQSStandardQueueKeepsMessageGroups(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t, awslocaltest.WithTopology(testkit.OneTopic("fair.test", 1, false)))
	ctx := context.Background()
	q := env.Queue("fair.test")
	_, err := env.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String("acme"), MessageGroupId: aws.String("acme")})
	require.NoError(t, err)
	_, err = env.SQS.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.URL), Entries: []sqstypes.SendMessageBatchRequestEntry{
		{Id: aws.String("a"), MessageBody: aws.String("globex"), MessageGroupId: aws.String("globex")},
		{Id: aws.String("b"), MessageBody: aws.String("ungrouped")},
	}})
	require.NoError(t, err)

	// Asked for by name, as SQS wants it; "All" is covered by the DLQ below.
	out, err := env.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(q.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameMessageGroupId},
	})
	require.NoError(t, err)
	require.Len(t, out.Messages, 3)
	for _, m := range out.Messages {
		body := aws.ToString(m.Body)
		if body == "ungrouped" {
			require.NotContains(t, m.Attributes, "MessageGroupId")
		} else {
			require.Equal(t, body, m.Attributes["MessageGroupId"])
		}
		_, err := env.SQS.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(q.URL), ReceiptHandle: m.ReceiptHandle})
		require.NoError(t, err)
	}
	require.Empty(t, env.ReceiveAll(ctx, q.URL, 1, 0), "maxReceiveCount 1: the next receive redrives")
	dead := env.ReceiveAll(ctx, q.DLQURL, 3, 2*time.Second)
	require.Len(t, dead, 3)
	for _, m := range dead {
		if body := aws.ToString(m.Body); body != "ungrouped" {
			require.Equal(t, body, m.Attributes["MessageGroupId"], "the redrive keeps the group")
		}
	}
}
