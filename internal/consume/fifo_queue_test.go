package consume_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// fifoTopic: a FIFO topic with Lambda-sized batches and three attempts.
func fifoTopic(tp *topology.Topic) {
	tp.FIFO, tp.BatchSize, tp.MaxReceiveCount = true, 5, 3
}

// pumpFIFO plays the event source mapping on the FIFO queue — receive up to
// a batch (several messages of a group, in order, as SQS gives them),
// invoke, delete what was not reported — until done says so.
func (b *bundle) pumpFIFO(t *testing.T, timeout time.Duration, done func() bool) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(timeout)
	for !done() {
		require.True(t, time.Now().Before(deadline), "not done after %s", timeout)
		out, err := b.env.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(b.q.URL), MaxNumberOfMessages: int32(b.topic.BatchSize), WaitTimeSeconds: 1,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		require.NoError(t, err)
		if len(out.Messages) > 0 {
			b.invoke(t, out.Messages)
		}
	}
}

// tries records each handler run: the message's attempt and receive count.
type tries struct {
	mu   sync.Mutex
	runs map[string][][2]int
}

func (r *tries) add(m consume.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.runs == nil {
		r.runs = map[string][][2]int{}
	}
	r.runs[m.Event.ID] = append(r.runs[m.Event.ID], [2]int{m.Attempt, m.ReceiveCount})
}

func (r *tries) of(id string) [][2]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.runs[id])
}

// A failing FIFO group blocks only itself, and every message of it gets
// its own attempts once it is at the front: a2 is received with a1 each
// time a1 fails (its receive count grows while it waits, never attempted),
// and still has all three attempts of its own when a1 succeeds — it is not
// dead-lettered for receives it waited through.
func TestFIFOMessagesBehindAFailureKeepTheirOwnAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t, fifoTopic)
	for _, id := range []string{"evt_a1", "evt_a2", "evt_a3", "evt_a4"} {
		b.publish(t, id, "A")
	}
	b.publish(t, "evt_b1", "B")
	b.publish(t, "evt_b2", "B")
	var runs tries
	b.handler.fail = func(m consume.Message, call int) error {
		runs.add(m)
		if (m.Event.ID == "evt_a1" || m.Event.ID == "evt_a2") && call < 3 {
			return errors.New("subscriber answered 503")
		}
		return nil
	}
	var bDone time.Time
	b.pumpFIFO(t, 60*time.Second, func() bool {
		_, effects, _ := b.handler.counts()
		if bDone.IsZero() && effects["evt_b2"] == 1 {
			bDone = time.Now()
		}
		return len(effects) == 6
	})

	calls, effects, order := b.handler.counts()
	for _, id := range []string{"evt_a1", "evt_a2", "evt_a3", "evt_a4", "evt_b1", "evt_b2"} {
		require.Equal(t, 1, effects[id], "%s delivered once", id)
		require.Equal(t, outbox.StatusCompleted, b.row(t, id).Status, id)
	}
	require.Equal(t, 3, calls["evt_a1"])
	require.Equal(t, 3, calls["evt_a2"], "a2 got its own three attempts")
	var groupA []string
	for _, id := range order {
		if id[4] == 'a' && (len(groupA) == 0 || groupA[len(groupA)-1] != id) {
			groupA = append(groupA, id)
		}
	}
	require.Equal(t, []string{"evt_a1", "evt_a2", "evt_a3", "evt_a4"}, groupA, "nothing of group A ran ahead of the message it waited behind: %v", order)

	a2 := runs.of("evt_a2")
	require.Equal(t, []int{1, 2, 3}, []int{a2[0][0], a2[1][0], a2[2][0]}, "attempts counted by the consumer")
	require.Greater(t, a2[0][1], 1, "a2 was received (with a1) before its first attempt: receive count %d", a2[0][1])
	require.Greater(t, a2[2][1], b.topic.MaxReceiveCount, "its last attempt came past maxReceiveCount receives, and was still made")

	dead := b.env.ReceiveAll(context.Background(), b.q.DLQURL, 10, 0)
	require.Empty(t, dead, "nothing dead-lettered")
	require.False(t, bDone.IsZero())
}

// A FIFO group that never recovers is dead-lettered in order, each message
// after its own attempts, while the other group flows.
func TestFIFOGroupThatNeverRecoversIsDeadLetteredInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, fifoTopic)
	for _, id := range []string{"evt_a1", "evt_a2", "evt_a3"} {
		b.publish(t, id, "A")
	}
	b.publish(t, "evt_b1", "B")
	b.handler.fail = func(m consume.Message, _ int) error {
		if m.Event.ID[4] == 'a' {
			return errors.New("subscriber answered 503")
		}
		return nil
	}
	ctx := context.Background()
	var dead []sqstypes.Message
	b.pumpFIFO(t, 90*time.Second, func() bool {
		dead = append(dead, b.env.ReceiveAndDelete(ctx, b.q.DLQURL, 10, 0)...)
		return len(dead) == 3
	})
	var ids []string
	for _, m := range dead {
		ids = append(ids, eventIDOf(t, m))
		require.Equal(t, "acme/A", m.Attributes["MessageGroupId"], "the DLQ keeps the group")
		require.Equal(t, consume.CodeMaxReceives, aws.ToString(m.MessageAttributes[outbox.AttrErrorCode].StringValue))
		require.Contains(t, aws.ToString(m.MessageAttributes[outbox.AttrErrorMessage].StringValue), "gave up after 3 attempts")
	}
	require.Equal(t, []string{"evt_a1", "evt_a2", "evt_a3"}, ids, "dead-lettered in order")
	calls, effects, _ := b.handler.counts()
	for _, id := range ids {
		require.Equal(t, 3, calls[id], "%s: its own three attempts", id)
	}
	require.Equal(t, 1, effects["evt_b1"], "the other group flowed")
}
