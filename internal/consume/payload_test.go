package consume_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/s3blob"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// A claim-checked payload reaches the handler inline, byte for byte; a
// fetch failure is retried; a corrupt object is poison.
func TestClaimCheckedPayloadsAreRehydrated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	big := map[string]any{"lines": strings.Repeat("x", 2048)}
	for _, id := range []string{"evt_big", "evt_big_flaky", "evt_big_corrupt"} {
		res, err := b.ingest.Publish(ctx, envelopeJSON(id, "", big))
		require.NoError(t, err)
		require.Equal(t, envelope.StatusEnqueued, res.Status)
	}
	var mu sync.Mutex
	seen := map[string]string{}
	b.handler.hold = func(_ context.Context, m consume.Message, _ int) {
		require.Nil(t, m.Event.PayloadRef)
		mu.Lock()
		seen[m.Event.ID] = string(m.Event.Payload)
		mu.Unlock()
	}
	// Tamper with one stored payload.
	rec, _, err := b.events.Load(ctx, key("evt_big_corrupt"))
	require.NoError(t, err)
	require.NotNil(t, rec.Event.PayloadRef, "ingest claim-checked it")
	store := &s3blob.S3{Client: b.env.Emulators.S3()}
	require.NoError(t, store.Put(ctx, rec.Event.PayloadRef.Bucket, rec.Event.PayloadRef.Key, []byte(`{"lines":"tampered"}`)))

	msgs := b.receive(t, 3, 5*time.Second)
	require.Len(t, msgs, 3)
	byID := map[string]sqsMessage{}
	for _, m := range msgs {
		require.Contains(t, aws.ToString(m.Body), `"payloadRef"`, "the message carries the reference, not the payload")
		byID[eventIDOf(t, m)] = m
	}
	want := string(mustRaw(t, big))

	require.Empty(t, b.invoke(t, []sqsMessage{byID["evt_big"]}))
	require.JSONEq(t, want, seen["evt_big"], "the handler gets the payload inline")
	require.Equal(t, outbox.StatusCompleted, b.row(t, "evt_big").Status)

	require.Empty(t, b.invoke(t, []sqsMessage{byID["evt_big_corrupt"]}))
	_, ok := seen["evt_big_corrupt"]
	require.False(t, ok, "a corrupt payload never reaches the handler")
	dead := b.env.ReceiveAll(ctx, b.q.DLQURL, 1, time.Second)
	require.Len(t, dead, 1)
	require.Equal(t, consume.CodePayloadCorrupt, aws.ToString(dead[0].MessageAttributes[outbox.AttrErrorCode].StringValue))

	b.env.Faults.Add(awslocal.Fault{Service: "S3", Operation: "GetObject", Times: 1})
	flaky := byID["evt_big_flaky"]
	require.True(t, b.invoke(t, []sqsMessage{flaky})[aws.ToString(flaky.MessageId)], "a failed fetch is retried")
	require.Contains(t, b.row(t, "evt_big_flaky").LastError, "fetch claim-checked payload")
	require.Empty(t, b.invoke(t, b.receive(t, 1, 5*time.Second)))
	require.JSONEq(t, want, seen["evt_big_flaky"])
}

func mustRaw(t *testing.T, v any) []byte {
	t.Helper()
	return []byte(testkit.MustJSON(v))
}

// batchRecorder is a BatchHandler that records what it was given.
type batchRecorder struct {
	mu      sync.Mutex
	batches [][]string
	fail    map[string]error
}

func (r *batchRecorder) HandleBatch(_ context.Context, ms []consume.Message) []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	var errs []error
	for i, m := range ms {
		ids = append(ids, m.Event.ID)
		if err := r.fail[m.Event.ID]; err != nil {
			if errs == nil {
				errs = make([]error, len(ms))
			}
			errs[i] = err
		}
	}
	r.batches = append(r.batches, ids)
	return errs
}

// A BatchHandler sees every claimable message of the batch once, in
// delivery order; duplicates are filtered before it, and its per-message
// errors are routed like a Handler's.
func TestBatchHandlerGetsTheClaimedMessagesAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ids := []string{"evt_b0", "evt_b1", "evt_b2", "evt_b3", "evt_b4"}
	for _, id := range ids {
		b.publish(t, id, "")
	}
	br := &batchRecorder{fail: map[string]error{
		"evt_b1": errors.New("s3 throttled"),
		"evt_b3": consume.Permanent("bad_event", errors.New("cannot archive")),
	}}
	b.rebuild(t, func(_ *consume.Config, d *consume.Deps) { d.Handler, d.Batch = nil, br })

	msgs := b.receive(t, 5, 5*time.Second)
	require.Len(t, msgs, 5)
	// evt_b4 completed already (a redelivery of a handled message).
	first := msgs[4]
	require.Empty(t, b.invoke(t, msgs[4:]))
	require.Equal(t, "evt_b4", eventIDOf(t, first))
	_, err := b.env.Emulators.SQS().SendMessage(ctx, sendInput(b.q.URL, aws.ToString(first.Body), first.MessageAttributes))
	require.NoError(t, err)
	dup := b.receive(t, 1, 5*time.Second)
	require.Len(t, dup, 1)

	batch := append(msgs[:4:4], dup...)
	failed := b.invoke(t, batch)
	require.Len(t, br.batches, 2)
	var order []string
	for _, m := range msgs[:4] {
		order = append(order, eventIDOf(t, m))
	}
	require.Equal(t, order, br.batches[1], "one call with the claimed messages, in delivery order; the duplicate is not among them")
	require.Equal(t, map[string]bool{aws.ToString(msgs[indexOf(t, msgs, "evt_b1")].MessageId): true}, failed)
	require.Equal(t, outbox.StatusCompleted, b.row(t, "evt_b0").Status)
	require.Equal(t, "s3 throttled", b.row(t, "evt_b1").LastError)
	require.Equal(t, "bad_event: cannot archive", b.row(t, "evt_b3").LastError)
	dead := b.env.ReceiveAll(ctx, b.q.DLQURL, 1, time.Second)
	require.Len(t, dead, 1)
	require.Equal(t, "evt_b3", eventIDOf(t, dead[0]))
	lines := b.metrics.JSONLines(t)
	require.Equal(t, 1.0, sum(lines, consume.MetricDuplicate))
}

func indexOf(t *testing.T, msgs []sqsMessage, id string) int {
	t.Helper()
	for i, m := range msgs {
		if eventIDOf(t, m) == id {
			return i
		}
	}
	t.Fatalf("no message for %s", id)
	return -1
}
