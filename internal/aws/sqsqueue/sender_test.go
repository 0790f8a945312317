package sqsqueue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/sqsqueue"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/topology"
)

func fifoTopology() topology.Topology {
	top := topology.Default().Clone()
	top.Topics[0].FIFO = true // billing.events
	top.Topics[0].BatchSize = 5
	return top
}

func TestSendUnknownTopic(t *testing.T) {
	t.Parallel()
	s := &sqsqueue.Sender{URLs: map[string]string{}}
	require.ErrorContains(t, s.Send(context.Background(), outbox.Message{Topic: "nope"}), `no queue configured for topic "nope"`)
}

// Any valid subject is a usable FIFO ordering key: SQS takes 1..128
// characters of [!-~] as a group id, subjects are up to 255 printable
// characters of any script. Before, such a subject made every send fail.
// The group is the tenant's sequence of the entity.
func TestFIFOGroupIDsFromAnySubject(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t, awslocaltest.WithTopology(fifoTopology()))
	ctx := context.Background()
	q := env.Resources.Queues[topology.Billing]
	s := &sqsqueue.Sender{Client: env.SQS, URLs: env.Resources.QueueURLs(), FIFO: map[string]bool{topology.Billing: true}}
	subjects := []string{"cus_1", "order 42", "Zoë 😀", strings.Repeat("x", 129), strings.Repeat("é", 255)}
	for i, subject := range subjects {
		msg := outbox.Message{Topic: topology.Billing, EventID: "evt_g" + string(rune('a'+i)), TenantID: "acme", Type: "stripe.invoice.paid", OrderingKey: subject, Body: []byte(`{"s":"` + subject + `"}`)}
		require.NoError(t, s.Send(ctx, msg), "subject %q", subject)
	}
	got := map[string]bool{}
	for _, m := range env.ReceiveAll(ctx, q.URL, len(subjects), 5*time.Second) {
		got[m.Attributes["MessageGroupId"]] = true
	}
	require.Len(t, got, len(subjects), "one group per subject")
	require.True(t, got["acme/cus_1"], "usable keys are the group id as they are, after the tenant")
	require.Equal(t, sqsqueue.OrderingGroup("acme", "order 42"), sqsqueue.OrderingGroup("acme", "order 42"), "deterministic: one key stays one group")
	require.True(t, got[sqsqueue.GroupID("acme/Zoë 😀")])
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
		got := sqsqueue.GroupID(tc.in)
		require.Equal(t, tc.same, got == tc.in, "%q", tc.in)
		require.LessOrEqual(t, len(got), 128)
		require.NotEmpty(t, got)
		for _, r := range got {
			require.True(t, r >= '!' && r <= '~', "%q has %q", got, r)
		}
	}
}

func TestOrderingGroup(t *testing.T) {
	t.Parallel()
	require.Equal(t, "acme/cus_1", sqsqueue.OrderingGroup("acme", "cus_1"))
	require.Equal(t, "acme", sqsqueue.OrderingGroup("acme", ""), "no key: the tenant's sequence")
	require.NotEqual(t, sqsqueue.OrderingGroup("acme", "order-1"), sqsqueue.OrderingGroup("globex", "order-1"), "tenants never share a group")
	require.Equal(t, sqsqueue.GroupID("acme/"+strings.Repeat("x", 200)), sqsqueue.OrderingGroup("acme", strings.Repeat("x", 200)))
}
