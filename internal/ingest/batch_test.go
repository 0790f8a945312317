package ingest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire/wiretest"
)

// eachEmulator runs fn on a bundle on each DynamoDB emulator: the
// embedded one, where the enqueued marks fall back to UpdateItems (it has
// no PartiQL), and DynamoDB Local, which names every failed condition of a
// cancelled transaction.
func eachEmulator(t *testing.T, fn func(t *testing.T, b *bundle)) {
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		fn(t, setup(t))
	})
	t.Run("dynamodb-local", func(t *testing.T) {
		t.Parallel()
		b := setupOn(t, awslocaltest.NewEnv(t, awslocaltest.WithEmulators(awslocaltest.SharedDynamoDBLocal(t))))
		b.local = true
		fn(t, b)
	})
}

func (b *bundle) batch(t *testing.T, raws ...[]byte) []envelope.BatchResult {
	t.Helper()
	in := make([]json.RawMessage, len(raws))
	for i, r := range raws {
		in[i] = r
	}
	out := b.svc.PublishBatch(context.Background(), in)
	require.Len(t, out, len(raws))
	return out
}

// sentOnce drains topic and requires each id exactly once, nothing else.
func (b *bundle) sentOnce(t *testing.T, topic string, ids ...string) {
	t.Helper()
	got := map[string]int{}
	for _, m := range b.drain(t, topic) {
		got[aws.ToString(m.MessageAttributes[outbox.AttrEventID].StringValue)]++
	}
	want := map[string]int{}
	for _, id := range ids {
		want[id] = 1
	}
	require.Equal(t, want, got, topic)
}

// A batch answers each envelope exactly as Publish would: new events
// enqueued, a stored one a duplicate, an id the batch repeats a duplicate
// (same content) or a conflict (other content), bad input rejected with
// its code, an unrouted type unrouted; each new event stored once and
// sent once to each of its topics, its rows marked enqueued.
func TestBatchAnswersEachEnvelopeAsPublishWould(t *testing.T) {
	t.Parallel()
	eachEmulator(t, func(t *testing.T, b *bundle) {
		require.Equal(t, envelope.StatusEnqueued, b.publish(t, inquiry("evt_b_old")).Status)
		b.drain(t, topology.Notifications)
		b.drain(t, topology.CRM)

		other := event("evt_b2", "inquiry.created", "storefront", map[string]any{"name": "Bob"})
		out := b.batch(t,
			inquiry("evt_b1"),
			inquiry("evt_b_old"),
			[]byte(`{"id":"evt_bad","tenantId":"acme"}`),
			inquiry("evt_b2"),
			event("evt_b3", "content.drafted", "cms", map[string]any{}),
			inquiry("evt_b1"),
			other,
			[]byte(`7`),
			inquiry("evt_b4"),
		)
		status := func(i int) envelope.Status { require.Empty(t, out[i].Retry, i); return out[i].Status }
		require.Equal(t, envelope.StatusEnqueued, status(0))
		require.Equal(t, []string{topology.Notifications, topology.CRM}, out[0].Topics)
		require.Empty(t, out[0].PendingTopics)
		require.Equal(t, envelope.StatusDuplicate, status(1))
		require.Equal(t, envelope.StatusRejected, status(2))
		require.Equal(t, envelope.CodeMissingField, out[2].Error.Code)
		require.Equal(t, "evt_bad", out[2].EventID)
		require.Equal(t, envelope.StatusEnqueued, status(3))
		require.Equal(t, envelope.StatusUnrouted, status(4))
		require.Equal(t, envelope.StatusDuplicate, status(5), "the batch's own repeat meets the first")
		require.Equal(t, envelope.StatusRejected, status(6))
		require.Equal(t, envelope.CodeIdempotencyConflict, out[6].Error.Code)
		require.Equal(t, envelope.StatusRejected, status(7))
		require.Equal(t, envelope.CodeInvalidEnvelope, out[7].Error.Code)
		require.Equal(t, envelope.StatusEnqueued, status(8))

		for _, id := range []string{"evt_b1", "evt_b2", "evt_b4"} {
			require.Len(t, b.collection(t, id), 3, "%s: the ledger item and two rows, once", id)
			for topic, r := range b.rows(t, id) {
				require.Equal(t, outbox.StatusEnqueued, r.Status, "%s/%s", id, topic)
				require.True(t, r.Receipted, "%s/%s: the batch's receipt records the send", id, topic)
			}
		}
		require.Empty(t, b.collection(t, "evt_b3"), "unrouted: nothing stored")
		b.sentOnce(t, topology.Notifications, "evt_b1", "evt_b2", "evt_b4")
		b.sentOnce(t, topology.CRM, "evt_b1", "evt_b2", "evt_b4")
	})
}

// The point of the batch: 40 new events of two topics are one commit
// transaction (80 rows and 40 ledger items do not fit one: two), eight
// SendMessageBatch requests (40 messages per topic, 10 a request) and no
// single send, and the 80 sends are recorded in one receipt, not 80
// marks.
func TestBatchCommitsTogetherAndSendsInSQSBatches(t *testing.T) {
	t.Parallel()
	eachEmulator(t, func(t *testing.T, b *bundle) {
		raws := make([][]byte, 40)
		ids := make([]string, 40)
		for i := range raws {
			ids[i] = fmt.Sprintf("evt_many_%02d", i)
			raws[i] = inquiry(ids[i])
		}
		b.env.Calls.Reset()
		for i, r := range b.batch(t, raws...) {
			require.Equal(t, envelope.StatusEnqueued, r.Status, i)
		}
		require.Equal(t, 2, b.env.Calls.Count("DynamoDB", "TransactWriteItems"), "120 items: two transactions of at most 100")
		require.Equal(t, 8, b.env.Calls.Count("SQS", "SendMessageBatch"))
		require.Zero(t, b.env.Calls.Count("SQS", "SendMessage"))
		require.Equal(t, 1, b.env.Calls.Count("DynamoDB", "PutItem"), "one receipt")
		require.Zero(t, b.env.Calls.Count("DynamoDB", "BatchExecuteStatement"), "no marks")
		require.Zero(t, b.env.Calls.Count("DynamoDB", "UpdateItem"), "no marks")
		for _, id := range ids {
			for topic, r := range b.rows(t, id) {
				require.Equal(t, outbox.StatusEnqueued, r.Status, "%s/%s", id, topic)
				require.True(t, r.Receipted, "%s/%s", id, topic)
			}
		}
		b.sentOnce(t, topology.Notifications, ids...)
		b.sentOnce(t, topology.CRM, ids...)
	})
}

// A transaction that cannot be committed (its retries used up) stores
// none of its events and answers each with Retry, while the batch's other
// transaction commits and sends; publishing the failed ones again stores
// each once.
func TestBatchCommitFailureAsksForARetryOfItsEventsOnly(t *testing.T) {
	t.Parallel()
	eachEmulator(t, func(t *testing.T, b *bundle) {
		raws := make([][]byte, 40)
		for i := range raws {
			raws[i] = inquiry(fmt.Sprintf("evt_fail_%02d", i))
		}
		// The first transaction (33 events: 99 items) fails for good.
		remove := b.env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "TransactWriteItems",
			Err: awslocal.ServiceUnavailable(), Match: func(in any) bool {
				return len(in.(*dynamodb.TransactWriteItemsInput).TransactItems) == 99
			}})
		out := b.batch(t, raws...)
		remove()
		var retry, stored []int
		for i, r := range out {
			if r.Retry != "" {
				require.Equal(t, fmt.Sprintf("evt_fail_%02d", i), r.EventID)
				require.Empty(t, r.Status)
				retry = append(retry, i)
				require.Empty(t, b.collection(t, r.EventID), "not stored")
				continue
			}
			require.Equal(t, envelope.StatusEnqueued, r.Status)
			stored = append(stored, i)
		}
		require.Len(t, retry, 33)
		require.Len(t, stored, 7)

		again := make([][]byte, len(retry))
		for k, i := range retry {
			again[k] = raws[i]
		}
		for _, r := range b.batch(t, again...) {
			require.Equal(t, envelope.StatusEnqueued, r.Status)
		}
		all := make([]string, 40)
		for i := range all {
			all[i] = fmt.Sprintf("evt_fail_%02d", i)
		}
		b.sentOnce(t, topology.Notifications, all...)
	})
}

// A topic whose SendMessageBatch fails leaves that topic's rows failed
// (due for the sweeper, lease released) and the events accepted with the
// topic pending; the other topic is sent and marked.
func TestBatchSendFailureLeavesThatTopicPending(t *testing.T) {
	t.Parallel()
	eachEmulator(t, func(t *testing.T, b *bundle) {
		remove := b.env.Faults.Add(awslocal.Fault{Service: "SQS", Operation: "SendMessageBatch", Resource: b.queueURL(topology.CRM)})
		out := b.batch(t, inquiry("evt_sf1"), inquiry("evt_sf2"))
		remove()
		for _, r := range out {
			require.Equal(t, envelope.StatusAccepted, r.Status)
			require.Equal(t, []string{topology.CRM}, r.PendingTopics)
		}
		for _, id := range []string{"evt_sf1", "evt_sf2"} {
			rows := b.rows(t, id)
			require.Equal(t, outbox.StatusEnqueued, rows[topology.Notifications].Status)
			crm := rows[topology.CRM]
			require.Equal(t, outbox.StatusFailed, crm.Status)
			require.Equal(t, 1, crm.Attempts)
			require.NotEmpty(t, crm.LastError)
			require.Equal(t, b.clock.Now().Add(2*time.Minute), crm.NextRetryAt)
			require.False(t, crm.Leased(b.clock.Now()))
		}
		b.sentOnce(t, topology.Notifications, "evt_sf1", "evt_sf2")
		b.sentOnce(t, topology.CRM)
	})
}

// More than envelope.MaxBatch envelopes are refused whole, each with
// batch_too_large, and nothing is stored.
func TestBatchOfMoreThanMaxIsRefused(t *testing.T) {
	t.Parallel()
	eachEmulator(t, func(t *testing.T, b *bundle) {
		raws := make([][]byte, envelope.MaxBatch+1)
		for i := range raws {
			raws[i] = inquiry(fmt.Sprintf("evt_big_%03d", i))
		}
		for _, r := range b.batch(t, raws...) {
			require.Equal(t, envelope.StatusRejected, r.Status)
			require.Equal(t, envelope.CodeBatchTooLarge, r.Error.Code)
			require.NotEmpty(t, r.Error.Message)
		}
		require.Zero(t, b.env.Calls.Total())
		require.Zero(t, b.tableItems(t))
	})
}

// The Lambda handler: an envelope gets its Result (as before batches), a
// JSON array a {"results":[…]} in order; an array that is not JSON is an
// invalid_batch rejection.
func TestHandleTakesAnEnvelopeOrABatch(t *testing.T) {
	t.Parallel()
	eachEmulator(t, func(t *testing.T, b *bundle) {
		ctx := context.Background()
		reply, err := b.svc.Handle(ctx, inquiry("evt_h1"))
		require.NoError(t, err)
		raw, err := json.Marshal(reply)
		require.NoError(t, err)
		var one envelope.Result
		require.NoError(t, json.Unmarshal(raw, &one))
		require.Equal(t, envelope.StatusEnqueued, one.Status)
		require.NotContains(t, string(raw), "results")

		reply, err = b.svc.Handle(ctx, json.RawMessage(" \n["+string(inquiry("evt_h2"))+`,{"id":"x"}]`))
		require.NoError(t, err)
		raw, err = json.Marshal(reply)
		require.NoError(t, err)
		var many envelope.BatchReply
		require.NoError(t, json.Unmarshal(raw, &many))
		require.Len(t, many.Results, 2)
		require.Equal(t, envelope.StatusEnqueued, many.Results[0].Status)
		require.Equal(t, "evt_h2", many.Results[0].EventID)
		require.Equal(t, envelope.StatusRejected, many.Results[1].Status)

		reply, err = b.svc.Handle(ctx, json.RawMessage(`[{"id":`))
		require.NoError(t, err)
		require.Nil(t, reply.Batch)
		require.Equal(t, envelope.StatusRejected, reply.Result.Status)
		require.Equal(t, envelope.CodeInvalidBatch, reply.Result.Error.Code)
	})
}

// On a FIFO topic a batch keeps an entity's events in the batch's order
// (one message group, sent in sequence), whatever the batch's size.
func TestBatchKeepsAnEntitysOrderOnAFIFOTopic(t *testing.T) {
	t.Parallel()
	env := fifoBillingEnv(t)
	svc := wiretest.Ingest(t, env, wiretest.Opts{})
	ctx := context.Background()
	var raws []json.RawMessage
	var want []string
	for i := range 23 {
		id := fmt.Sprintf("evt_fifo_%02d", i)
		want = append(want, id)
		raws = append(raws, stripeEnvelope(t, id, "cus_B", 0))
	}
	for _, r := range svc.PublishBatch(ctx, raws) {
		require.Equal(t, envelope.StatusEnqueued, r.Status, r.Retry)
	}
	var got []string
	for range 10 {
		msgs := env.ReceiveAndDelete(ctx, env.Queue(topology.Billing).URL, 10, 2*time.Second)
		for _, m := range msgs {
			require.Equal(t, "acme/cus_B", m.Attributes["MessageGroupId"])
			got = append(got, aws.ToString(m.MessageAttributes[outbox.AttrEventID].StringValue))
		}
		if len(got) >= len(want) {
			break
		}
	}
	require.Equal(t, want, got)
}

// A batch's sends are recorded in one receipt (outbox.Receipts); when the
// receipt cannot be written, each row is marked enqueued instead, and
// nothing is sent twice.
func TestBatchReceiptFailureMarksEachRow(t *testing.T) {
	t.Parallel()
	eachEmulator(t, func(t *testing.T, b *bundle) {
		remove := b.env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "PutItem", Resource: b.cfg.EventsTable, Err: awslocal.ServiceUnavailable()})
		out := b.batch(t, inquiry("evt_rf1"), inquiry("evt_rf2"), inquiry("evt_rf3"))
		remove()
		require.Equal(t, 1, b.env.Faults.Injected("PutItem"))
		for i, r := range out {
			require.Equal(t, envelope.StatusEnqueued, r.Status, i)
			require.Empty(t, r.PendingTopics, i)
		}
		for _, id := range []string{"evt_rf1", "evt_rf2", "evt_rf3"} {
			for topic, r := range b.rows(t, id) {
				require.Equal(t, outbox.StatusEnqueued, r.Status, "%s/%s", id, topic)
				require.False(t, r.Receipted, "%s/%s: marked on the row", id, topic)
				require.False(t, r.Leased(b.clock.Now()), "%s/%s: the mark released the lease", id, topic)
			}
		}
		b.sentOnce(t, topology.Notifications, "evt_rf1", "evt_rf2", "evt_rf3")
		b.sentOnce(t, topology.CRM, "evt_rf1", "evt_rf2", "evt_rf3")
	})
}

// A batch's events published again after the batch's lease ended (their
// rows still pending under it, as the receipt left them): duplicates with
// nothing pending, and nothing re-driven, since the receipt says the
// messages went out.
func TestBatchDuplicateAfterTheLeaseRedrivesNothing(t *testing.T) {
	t.Parallel()
	eachEmulator(t, func(t *testing.T, b *bundle) {
		ids := []string{"evt_rd1", "evt_rd2", "evt_rd3"}
		for _, r := range b.batch(t, inquiry(ids[0]), inquiry(ids[1]), inquiry(ids[2])) {
			require.Equal(t, envelope.StatusEnqueued, r.Status)
		}
		b.sentOnce(t, topology.Notifications, ids...)
		b.sentOnce(t, topology.CRM, ids...)
		b.clock.Advance(b.cfg.Ingest.Lease + time.Minute)

		b.env.Calls.Reset()
		again := b.batch(t, inquiry(ids[0]), inquiry(ids[1]))
		again = append(again, envelope.BatchResult{Result: b.publish(t, inquiry(ids[2]))})
		for i, r := range again {
			require.Equal(t, envelope.StatusDuplicate, r.Status, i)
			require.Empty(t, r.PendingTopics, i)
		}
		require.Zero(t, b.env.Calls.Count("SQS", "SendMessage")+b.env.Calls.Count("SQS", "SendMessageBatch"), "nothing re-driven")
		require.Zero(t, b.env.Calls.Count("DynamoDB", "UpdateItem"), "no claim for a re-drive")
		b.sentOnce(t, topology.Notifications)
		b.sentOnce(t, topology.CRM)
	})
}

// A batch call that dies between its commit and its sends (every send and
// every status write lost): its rows are re-driven by the caller's retry
// as soon as the lease ends (a duplicate's re-drive), and the sweeper
// first looks at them only after BatchDueAfter, so rows a lagging
// consumer has not claimed yet cost it nothing before then.
func TestBatchRowsComeDueForTheSweeperAfterBatchDueAfter(t *testing.T) {
	t.Parallel()
	eachEmulator(t, func(t *testing.T, b *bundle) {
		ctx := context.Background()
		removeSend := b.env.Faults.Add(awslocal.Fault{Service: "SQS", Operation: "SendMessageBatch"})
		removeMark := b.env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "UpdateItem", Resource: b.cfg.EventsTable})
		for _, r := range b.batch(t, inquiry("evt_bd1"), inquiry("evt_bd2")) {
			require.Equal(t, envelope.StatusAccepted, r.Status)
		}
		removeSend()
		removeMark()
		for _, id := range []string{"evt_bd1", "evt_bd2"} {
			for topic, r := range b.rows(t, id) {
				require.Equal(t, outbox.StatusPending, r.Status, "%s/%s", id, topic)
			}
		}
		afterLease := b.clock.Now().Add(b.cfg.Ingest.Lease + time.Second)
		due, err := b.events.Due(ctx, afterLease, 50)
		require.NoError(t, err)
		require.Empty(t, due, "after the lease, not yet for the sweeper")
		due, err = b.events.Due(ctx, b.clock.Now().Add(b.cfg.Ingest.BatchDueAfter+time.Second), 50)
		require.NoError(t, err)
		require.Len(t, due, 4, "after BatchDueAfter every row is due")

		b.clock.Set(afterLease)
		res := b.publish(t, inquiry("evt_bd1"))
		require.Equal(t, envelope.StatusDuplicate, res.Status)
		require.Empty(t, res.PendingTopics, "the retry re-drove both topics")
		b.sentOnce(t, topology.Notifications, "evt_bd1")
		b.sentOnce(t, topology.CRM, "evt_bd1")
	})
}

// billingOrder receives n messages from the billing FIFO queue (deleting
// each batch, so a group's next messages come) and returns each message
// group's event ids in the order they arrived.
func (b *bundle) billingOrder(t *testing.T, n int) map[string][]string {
	t.Helper()
	got, count := map[string][]string{}, 0
	deadline := time.Now().Add(30 * time.Second)
	for count < n {
		require.True(t, time.Now().Before(deadline), "received %d of %d: %v", count, n, got)
		for _, m := range b.env.ReceiveAndDelete(context.Background(), b.queueURL(topology.Billing), 0, time.Second) {
			g := m.Attributes["MessageGroupId"]
			got[g] = append(got[g], aws.ToString(m.MessageAttributes[outbox.AttrEventID].StringValue))
			count++
		}
	}
	require.Empty(t, b.env.ReceiveAndDelete(context.Background(), b.queueURL(topology.Billing), 0, 300*time.Millisecond), "nothing more")
	return got
}

// A call retried after an earlier one died between its commit and its
// sends: the customer's event that call stored (a duplicate now, its row
// pending) is re-driven before the customer's new event of the retry is
// sent, so the FIFO group keeps the batch's order (the new event went
// first before).
func TestBatchRedrivesAnEntitysEarlierEventBeforeItsNewOnes(t *testing.T) {
	t.Parallel()
	eachEmulator(t, func(t *testing.T, b *bundle) {
		first, second := stripeEnvelope(t, "evt_seq_1", "cus_S", 0), stripeEnvelope(t, "evt_seq_2", "cus_S", 0)
		removeSend := b.env.Faults.Add(awslocal.Fault{Service: "SQS", Operation: "SendMessageBatch"})
		removeMark := b.env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "UpdateItem", Resource: b.cfg.EventsTable})
		require.Equal(t, envelope.StatusAccepted, b.batch(t, first)[0].Status)
		removeSend()
		removeMark()
		b.clock.Advance(b.cfg.Ingest.Lease + time.Second)

		out := b.batch(t, first, second)
		require.Equal(t, envelope.StatusDuplicate, out[0].Status, out[0].Retry)
		require.Empty(t, out[0].PendingTopics, "re-driven")
		require.Equal(t, envelope.StatusEnqueued, out[1].Status, out[1].Retry)
		require.Equal(t, map[string][]string{"acme/cus_S": {"evt_seq_1", "evt_seq_2"}}, b.billingOrder(t, 2))
	})
}

// A transaction that fails holds back the rest of its events' ordering
// groups in the call: a customer's events after the failed ones are not
// stored (Retry) — stored, they would go out ahead of the ones the caller
// publishes again — while another customer's events of the call are.
func TestBatchCommitFailureHoldsBackTheRestOfItsOrderingGroup(t *testing.T) {
	t.Parallel()
	eachEmulator(t, func(t *testing.T, b *bundle) {
		var raws [][]byte
		var wantA, wantB []string
		for i := range 60 {
			id, customer := fmt.Sprintf("evt_grp_%02d", i), "cus_A"
			if i >= 55 {
				customer = "cus_B"
				wantB = append(wantB, id)
			} else {
				wantA = append(wantA, id)
			}
			raws = append(raws, stripeEnvelope(t, id, customer, 0))
		}
		// The first transaction (50 events: 100 items) fails for good.
		remove := b.env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "TransactWriteItems",
			Err: awslocal.ServiceUnavailable(), Match: func(in any) bool {
				return len(in.(*dynamodb.TransactWriteItemsInput).TransactItems) == 100
			}})
		out := b.batch(t, raws...)
		remove()
		var again [][]byte
		for i, r := range out {
			if i < 55 {
				require.NotEmpty(t, r.Retry, "%d: cus_A's events wait for the failed ones", i)
				require.Empty(t, b.collection(t, r.EventID), "%d: not stored", i)
				again = append(again, raws[i])
				continue
			}
			require.Equal(t, envelope.StatusEnqueued, r.Status, "%d: cus_B is not held back", i)
		}
		for _, r := range b.batch(t, again[:50]...) {
			require.Equal(t, envelope.StatusEnqueued, r.Status, r.Retry)
		}
		for _, r := range b.batch(t, again[50:]...) {
			require.Equal(t, envelope.StatusEnqueued, r.Status, r.Retry)
		}
		require.Equal(t, map[string][]string{"acme/cus_A": wantA, "acme/cus_B": wantB}, b.billingOrder(t, 60))
	})
}
