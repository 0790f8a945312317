package consume_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// rowsOnly hides the adapter's BatchRows: the per-message claims and
// completions a batch handler's consumer made before them.
type rowsOnly struct{ consume.Rows }

// dynamoCalls sums the DynamoDB calls of a Calls snapshot.
func dynamoCalls(snap map[string]int) int {
	n := 0
	for k, v := range snap {
		if strings.HasPrefix(k, "DynamoDB.") {
			n += v
		}
	}
	return n
}

// A batch handler's batch of n messages, on DynamoDB Local, claims its
// rows in one BatchExecuteStatement and completes them in another: no
// UpdateItem. The same batch one by one costs two UpdateItems a message.
func TestBatchHandlerClaimsAndCompletesTheBatchInTwoRequests(t *testing.T) {
	t.Parallel()
	b := setupOn(t, awslocaltest.SharedDynamoDBLocal(t))
	const n = 10
	run := func(prefix string, rows consume.Rows) map[string]int {
		t.Helper()
		for i := range n {
			b.publish(t, prefix+strconv.Itoa(i), "")
		}
		br := &batchRecorder{}
		b.rebuild(t, func(_ *consume.Config, d *consume.Deps) { d.Handler, d.Batch, d.Rows = nil, br, rows })
		msgs := b.receive(t, n, 5*time.Second)
		require.Len(t, msgs, n)
		b.env.Calls.Reset()
		require.Empty(t, b.invoke(t, msgs))
		snap := b.env.Calls.Snapshot()
		require.Len(t, br.batches, 1)
		require.Len(t, br.batches[0], n)
		for i := range n {
			require.Equal(t, outbox.StatusCompleted, b.row(t, prefix+strconv.Itoa(i)).Status)
		}
		return snap
	}
	before := run("evt_one", rowsOnly{b.events})
	require.Equal(t, 2*n, before["DynamoDB.UpdateItem"], "%v", before)
	after := run("evt_bat", b.events)
	require.Equal(t, 2, after["DynamoDB.BatchExecuteStatement"], "%v", after)
	require.Zero(t, after["DynamoDB.UpdateItem"], "%v", after)
	t.Logf("DynamoDB requests for a batch of %d: one by one %d (%.1f a message), batched %d (%.1f a message)",
		n, dynamoCalls(before), float64(dynamoCalls(before))/n, dynamoCalls(after), float64(dynamoCalls(after))/n)
}

// On a FIFO topic the batch claims in rounds, one message of each group a
// round, so a message held behind a retried one of its group is never
// claimed (as walk leaves it on the per-message path): its row keeps no
// lease and no attempt count.
func TestFIFOBatchClaimsNothingBehindARetriedMessage(t *testing.T) {
	t.Parallel()
	b := setupOn(t, awslocaltest.SharedDynamoDBLocal(t), func(tp *topology.Topic) { tp.FIFO = true })
	ctx := context.Background()
	order := []grouped{
		{"evt_a1", "A"}, {"evt_b1", "B"}, {"evt_a2", "A"}, {"evt_b2", "B"}, {"evt_a3", "A"},
	}
	ev := b.fifoEvent(t, order)
	// Another delivery of evt_a2 holds its row: a2 is busy, retried.
	c, err := b.events.BeginProcessing(ctx, consume.Processing{
		Row: outbox.RowRef{Key: key("evt_a2"), Topic: topicName}, EventID: "evt_a2", TenantID: "acme", Type: "order.created",
		Owner: "msg-elsewhere", Until: time.Now().Add(time.Hour), Now: time.Now(),
	})
	require.NoError(t, err)
	require.Equal(t, consume.Claimed, c.State)
	br := &batchRecorder{}
	b.rebuild(t, func(_ *consume.Config, d *consume.Deps) { d.Handler, d.Batch = nil, br })

	b.env.Calls.Reset()
	dctx, cancel := context.WithTimeout(ctx, b.topic.ConsumerTimeout)
	defer cancel()
	resp, err := b.consumer.Handle(dctx, ev)
	require.NoError(t, err)
	var reported []string
	for _, f := range resp.BatchItemFailures {
		reported = append(reported, f.ItemIdentifier)
	}
	require.Equal(t, []string{"msg-evt_a2", "msg-evt_a3"}, reported)
	require.Equal(t, [][]string{{"evt_a1", "evt_b1", "evt_b2"}}, br.batches, "delivery order")
	for _, id := range []string{"evt_a1", "evt_b1", "evt_b2"} {
		require.Equal(t, outbox.StatusCompleted, b.row(t, id).Status, id)
	}
	require.Equal(t, "msg-elsewhere", b.row(t, "evt_a2").LeaseOwner)
	a3 := b.row(t, "evt_a3")
	require.Equal(t, outbox.StatusEnqueued, a3.Status, "never claimed")
	require.Empty(t, a3.LeaseOwner)
	// Rounds: {a1, b1}, {a2, b2}, then a3 is blocked; one completion call.
	require.Equal(t, 3, b.env.Calls.Count("DynamoDB", "BatchExecuteStatement"))
}

// A batch completion that cannot be written in the batch (the call
// failed), nor by the adapter's per-row fallback, still gets
// completeDurably's budget: every row ends completed, no copy carries it.
func TestBatchCompletionFallsBackToTheDurableCompletion(t *testing.T) {
	t.Parallel()
	b := setupOn(t, awslocaltest.SharedDynamoDBLocal(t))
	const n = 5
	for i := range n {
		b.publish(t, "evt_fb"+strconv.Itoa(i), "")
	}
	br := &batchRecorder{}
	b.rebuild(t, func(_ *consume.Config, d *consume.Deps) { d.Handler, d.Batch = nil, br })
	msgs := b.receive(t, n, 5*time.Second)
	require.Len(t, msgs, n)
	completion := func(in any) bool {
		switch in := in.(type) {
		case *dynamodb.BatchExecuteStatementInput:
			return strings.Contains(aws.ToString(in.Statements[0].Statement), "completedAt")
		case *dynamodb.UpdateItemInput:
			return strings.Contains(aws.ToString(in.UpdateExpression), "completedAt")
		}
		return false
	}
	b.env.Faults.Add(awslocal.Fault{Operation: "BatchExecuteStatement", Match: completion, Times: 1})
	b.env.Faults.Add(awslocal.Fault{Operation: "UpdateItem", Match: completion, Times: n})
	b.env.Calls.Reset()
	require.Empty(t, b.invoke(t, msgs))
	require.Len(t, br.batches, 1)
	for i := range n {
		require.Equal(t, outbox.StatusCompleted, b.row(t, "evt_fb"+strconv.Itoa(i)).Status)
	}
	require.Equal(t, 1, b.env.Faults.Injected("BatchExecuteStatement"))
	require.Equal(t, n, b.env.Faults.Injected("UpdateItem"))
	require.Equal(t, 2*n, b.env.Calls.Count("DynamoDB", "UpdateItem"), "the adapter's fallback, then completeDurably's")
	require.Zero(t, b.env.Calls.Count("SQS", "SendMessage"), "no carried copy")
}
