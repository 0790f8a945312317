package queue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/localaws/localawstest"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/queue"
	"github.com/siteswarm/eventplatform/internal/topology"
)

func fifoTopology() topology.Topology {
	top := topology.Default().Clone()
	top.Topics[0].FIFO = true // billing.events
	top.Topics[0].BatchSize = 5
	return top
}

func TestSendFIFOGroupsAndDedupes(t *testing.T) {
	t.Parallel()
	env := localawstest.NewEnv(t, localawstest.WithTopology(fifoTopology()))
	ctx := context.Background()
	q := env.Resources.Queues[topology.Billing]
	require.True(t, strings.HasSuffix(q.URL, ".fifo"))
	s := &queue.Sender{Client: env.SQS, URLs: env.Resources.QueueURLs(), FIFO: map[string]bool{topology.Billing: true}}

	msg := outbox.Message{Topic: topology.Billing, EventID: "evt_1", TenantID: "acme", Type: "stripe.invoice.paid", Subject: "cus_1", Body: []byte(`{"id":"evt_1"}`)}
	require.NoError(t, s.Send(ctx, msg))
	require.NoError(t, s.Send(ctx, msg), "a provider retry inside the dedup window is accepted")
	replay := msg
	replay.ReplayOf, replay.DedupID = "inc_1", "replay:inc_1:1"
	require.NoError(t, s.Send(ctx, replay))
	require.NoError(t, s.Send(ctx, replay), "a repeated send of one replay is deduplicated")
	second := replay
	second.DedupID = "replay:inc_1:2"
	require.NoError(t, s.Send(ctx, second), "the next replay of the incident is not")
	long := msg
	long.EventID = strings.Repeat("e", 255)
	require.NoError(t, s.Send(ctx, long), "long event ids are hashed into a valid dedup id")

	// A FIFO group is locked while a message of it is in flight, so drain by
	// receiving and deleting.
	var got []sqstypes.Message
	for {
		out, err := env.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.URL), WaitTimeSeconds: 1,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		require.NoError(t, err)
		if len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			got = append(got, m)
			_, err := env.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: m.ReceiptHandle})
			require.NoError(t, err)
		}
	}
	require.Len(t, got, 4, "the retry and the repeated replay are deduplicated; two replays and the long id are not")
	for _, m := range got {
		require.Equal(t, "cus_1", m.Attributes["MessageGroupId"], "the subject is the message group")
	}
	var replays int
	for _, m := range got {
		if v, ok := m.MessageAttributes[queue.AttrReplayOf]; ok {
			require.Equal(t, "inc_1", aws.ToString(v.StringValue))
			replays++
		}
	}
	require.Equal(t, 2, replays)
}

func TestSendUnknownTopic(t *testing.T) {
	t.Parallel()
	s := &queue.Sender{URLs: map[string]string{}}
	require.ErrorContains(t, s.Send(context.Background(), outbox.Message{Topic: "nope"}), `no queue configured for topic "nope"`)
}

// Any valid subject is a usable FIFO ordering key: SQS takes 1..128
// characters of [!-~] as a group id, subjects are up to 255 printable
// characters of any script. Before, such a subject made every send fail.
func TestFIFOGroupIDsFromAnySubject(t *testing.T) {
	t.Parallel()
	env := localawstest.NewEnv(t, localawstest.WithTopology(fifoTopology()))
	ctx := context.Background()
	q := env.Resources.Queues[topology.Billing]
	s := &queue.Sender{Client: env.SQS, URLs: env.Resources.QueueURLs(), FIFO: map[string]bool{topology.Billing: true}}
	subjects := []string{"cus_1", "order 42", "Zoë 😀", strings.Repeat("x", 129), strings.Repeat("é", 255)}
	for i, subject := range subjects {
		msg := outbox.Message{Topic: topology.Billing, EventID: "evt_g" + string(rune('a'+i)), TenantID: "acme", Type: "stripe.invoice.paid", Subject: subject, Body: []byte(`{"s":"` + subject + `"}`)}
		require.NoError(t, s.Send(ctx, msg), "subject %q", subject)
	}
	got := map[string]bool{}
	for _, m := range env.ReceiveAll(ctx, q.URL, len(subjects), 5*time.Second) {
		got[m.Attributes["MessageGroupId"]] = true
	}
	require.Len(t, got, len(subjects), "one group per subject")
	require.True(t, got["cus_1"], "usable subjects are the group id as they are")
	require.Equal(t, queue.GroupID("order 42"), queue.GroupID("order 42"), "deterministic: one subject stays one group")
	require.True(t, got[queue.GroupID("Zoë 😀")])
}

func TestGroupID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		same bool
	}{
		{"cus_1", true}, {"a!~z", true}, {strings.Repeat("x", 128), true},
		{"", false}, {"a b", false}, {"é", false}, {strings.Repeat("x", 129), false}, {"tab\t", false},
	} {
		got := queue.GroupID(tc.in)
		require.Equal(t, tc.same, got == tc.in, "%q", tc.in)
		require.LessOrEqual(t, len(got), 128)
		require.NotEmpty(t, got)
		for _, r := range got {
			require.True(t, r >= '!' && r <= '~', "%q has %q", got, r)
		}
	}
}
