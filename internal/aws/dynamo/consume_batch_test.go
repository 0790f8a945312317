package dynamo_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/observe/costmodel"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// The batched claims and completions (BatchRows) against the single ones:
// the same rows in two tables, one claimed in a batch, the other one by
// one, must end attribute for attribute the same, with the same answers.

// batchTwins is a pair of tables seeded alike.
type batchTwins struct {
	batch, single *leaseBundle
	local         bool // DynamoDB Local: BatchExecuteStatement works
}

func newBatchTwins(t *testing.T, local bool, newEnv func(t *testing.T) *awslocaltest.Env) *batchTwins {
	return &batchTwins{
		batch:  &leaseBundle{env: newEnv(t), events: nil},
		single: &leaseBundle{env: newEnv(t), events: nil},
		local:  local,
	}
}

func (w *batchTwins) each(fn func(b *leaseBundle)) {
	for _, b := range []*leaseBundle{w.batch, w.single} {
		if b.events == nil {
			b.events = b.env.Events()
		}
		fn(b)
	}
}

// onBothEmulators runs a test on the embedded emulator (no PartiQL: every
// batch falls back) and on DynamoDB Local.
func onBothEmulators(t *testing.T, run func(t *testing.T, w *batchTwins)) {
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		run(t, newBatchTwins(t, false, func(t *testing.T) *awslocaltest.Env { return awslocaltest.NewEnv(t) }))
	})
	t.Run("dynamodb-local", func(t *testing.T) {
		t.Parallel()
		emu := awslocaltest.SharedDynamoDBLocal(t)
		run(t, newBatchTwins(t, true, func(t *testing.T) *awslocaltest.Env {
			return awslocaltest.NewEnv(t, awslocaltest.WithEmulators(emu))
		}))
	})
}

// requireSameRows compares the twins' rows of refs attribute by attribute.
func (w *batchTwins) requireSameRows(t *testing.T, refs []outbox.RowRef) {
	t.Helper()
	for _, r := range refs {
		got, want := w.batch.rawRow(t, r.Key, r.Topic), w.single.rawRow(t, r.Key, r.Topic)
		require.Equal(t, want, got, "row %s", r)
	}
}

func (w *batchTwins) singleClaims(t *testing.T, ps []consume.Processing) []consume.ClaimResult {
	t.Helper()
	out := make([]consume.ClaimResult, len(ps))
	for i, p := range ps {
		c, err := w.single.events.BeginProcessing(context.Background(), p)
		out[i] = consume.ClaimResult{Claim: c, Err: err}
	}
	return out
}

// withoutRoom is rs without the room a claim leaves its completion's
// attempt record: a single claim reads it from the row it returns
// (ALL_OLD), a batched statement returns no row, so its claims leave none
// (batch handlers note no answer to keep).
func withoutRoom(rs []consume.ClaimResult) []consume.ClaimResult {
	out := slices.Clone(rs)
	for i := range out {
		out[i].Claim.Log.Room = 0
	}
	return out
}

func refsOf(ps []consume.Processing) []outbox.RowRef {
	out := make([]outbox.RowRef, len(ps))
	for i, p := range ps {
		out[i] = p.Row
	}
	return out
}

var batchT1 = leaseT0.Add(time.Second)

func TestBatchClaimOfFreshRowsIsTheSingleClaim(t *testing.T) {
	t.Parallel()
	onBothEmulators(t, func(t *testing.T, w *batchTwins) {
		const n = 30 // two calls: 25 + 5
		var ps []consume.Processing
		for i := range n {
			id := fmt.Sprintf("evt_f%02d", i)
			w.each(func(b *leaseBundle) { b.commit(t, id, "ingest", time.Minute, "a.events") })
			ps = append(ps, processing(id, "msg-"+id, batchT1, 30*time.Second))
		}
		w.batch.env.Calls.Reset()
		got := w.batch.events.BeginProcessingBatch(context.Background(), ps)
		want := w.singleClaims(t, ps)
		require.Equal(t, withoutRoom(want), withoutRoom(got))
		for _, r := range withoutRoom(got) {
			require.Equal(t, consume.ClaimResult{Claim: consume.Claim{State: consume.Claimed, Attempt: 1, Log: outbox.AttemptLog{Known: true, Next: 1}}}, r)
		}
		w.requireSameRows(t, refsOf(ps))
		if w.local {
			require.Equal(t, 2, w.batch.env.Calls.Count("DynamoDB", "BatchExecuteStatement"))
			require.Zero(t, w.batch.env.Calls.Count("DynamoDB", "UpdateItem"), "no row took the single path")
		}
	})
}

// seedMixed puts rows in every state a claim meets into b and returns the
// batch of claims to request.
func seedMixed(t *testing.T, b *leaseBundle) []consume.Processing {
	t.Helper()
	ctx := context.Background()
	claim := func(id, owner string, now time.Time, lease time.Duration) {
		t.Helper()
		c, err := b.events.BeginProcessing(ctx, processing(id, owner, now, lease))
		require.NoError(t, err)
		require.Equal(t, consume.Claimed, c.State)
	}
	ref := func(id string) outbox.RowRef { return outbox.RowRef{Key: id, Topic: "a.events"} }
	for _, id := range []string{"evt_fresh", "evt_done", "evt_erased", "evt_busy", "evt_other", "evt_own", "evt_rep", "evt_dlq", "evt_lapsed"} {
		b.commit(t, id, "ingest", time.Minute, "a.events")
	}
	b.commit(t, "evt_norow", "ingest", time.Minute, "b.events") // the ledger without an a.events row

	claim("evt_done", "msg-old", leaseT0, time.Second)
	require.NoError(t, b.events.MarkCompleted(ctx, consume.Completion{Row: ref("evt_done"), Owner: "msg-old", Now: leaseT0}))
	_, err := b.env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(b.env.Resources.EventsTable), Key: rawKey("evt_erased", "a.events"),
		UpdateExpression:          aws.String("SET erasedAt = :e"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":e": &ddbtypes.AttributeValueMemberS{Value: dynamo.FormatTime(leaseT0)}},
	})
	require.NoError(t, err)
	claim("evt_busy", "msg-busy", leaseT0, time.Hour)
	// Another message's attempt count (a replay of an earlier delivery).
	claim("evt_other", "msg-prev", leaseT0, time.Millisecond)
	require.NoError(t, b.events.MarkRetry(ctx, consume.Release{Row: ref("evt_other"), Owner: "msg-prev", LastError: "503", RetryAt: batchT1, Now: leaseT0}))
	// This message's own count (its redelivery).
	claim("evt_own", "msg-evt_own", leaseT0, time.Millisecond)
	require.NoError(t, b.events.MarkRetry(ctx, consume.Release{Row: ref("evt_own"), Owner: "msg-evt_own", LastError: "503", RetryAt: batchT1, Now: leaseT0}))
	// Out of the due index: the claim puts it back.
	_, err = b.events.MarkDLQ(ctx, ref("evt_dlq"), leaseT0)
	require.NoError(t, err)
	// A lapsed lease of another delivery, taken over.
	claim("evt_lapsed", "msg-dead", leaseT0, time.Millisecond)

	var ps []consume.Processing
	for _, id := range []string{"evt_fresh", "evt_done", "evt_erased", "evt_busy", "evt_norow", "evt_noledger", "evt_other", "evt_own", "evt_rep", "evt_dlq", "evt_lapsed"} {
		ps = append(ps, processing(id, "msg-"+id, batchT1, 30*time.Second))
	}
	return append(ps, processing("evt_rep", "msg-evt_rep-2", batchT1, 30*time.Second))
}

func rawKey(id, topic string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{
		"pk": &ddbtypes.AttributeValueMemberS{Value: dynamo.EventPK(id)},
		"sk": &ddbtypes.AttributeValueMemberS{Value: dynamo.DispatchSK(topic)},
	}
}

func requireMixedAnswers(t *testing.T, got []consume.ClaimResult) {
	t.Helper()
	states := map[int]consume.ClaimState{
		0: consume.Claimed, 1: consume.AlreadyCompleted, 2: consume.Erased, 3: consume.Busy, 4: consume.Claimed,
		5: consume.LedgerMissing, 6: consume.Claimed, 7: consume.Claimed, 8: consume.Claimed, 9: consume.Claimed, 10: consume.Claimed, 11: consume.Busy,
	}
	for i, r := range got {
		require.NoError(t, r.Err, "claim %d", i)
		require.Equal(t, states[i], r.Claim.State, "claim %d", i)
	}
	require.Equal(t, 1, got[6].Claim.Attempt, "another message's count starts again")
	require.Equal(t, 2, got[7].Claim.Attempt, "its own count goes on")
}

func TestBatchClaimOfMixedRowsIsTheSingleClaim(t *testing.T) {
	t.Parallel()
	onBothEmulators(t, func(t *testing.T, w *batchTwins) {
		var ps []consume.Processing
		w.each(func(b *leaseBundle) { ps = seedMixed(t, b) })
		got := w.batch.events.BeginProcessingBatch(context.Background(), ps)
		want := w.singleClaims(t, ps)
		require.Equal(t, withoutRoom(want), withoutRoom(got))
		requireMixedAnswers(t, got)
		w.requireSameRows(t, refsOf(ps))
	})
}

func TestBatchClaimFallsBackWhenTheCallFails(t *testing.T) {
	t.Parallel()
	onBothEmulators(t, func(t *testing.T, w *batchTwins) {
		var ps []consume.Processing
		w.each(func(b *leaseBundle) { ps = seedMixed(t, b) })
		w.batch.env.Faults.Add(awslocal.Fault{Operation: "BatchExecuteStatement", Err: awslocal.Throttled()})
		got := w.batch.events.BeginProcessingBatch(context.Background(), ps)
		want := w.singleClaims(t, ps)
		require.Equal(t, withoutRoom(want), withoutRoom(got))
		requireMixedAnswers(t, got)
		w.requireSameRows(t, refsOf(ps))
		if w.local {
			require.Equal(t, 1, w.batch.env.Faults.Injected("BatchExecuteStatement"))
		}
	})
}

func TestBatchCompletionLosesOnlyTheRowTakenOver(t *testing.T) {
	t.Parallel()
	onBothEmulators(t, func(t *testing.T, w *batchTwins) {
		ctx := context.Background()
		var ps []consume.Processing
		for _, id := range []string{"evt_c1", "evt_c2", "evt_c3"} {
			w.each(func(b *leaseBundle) { b.commit(t, id, "ingest", time.Minute, "a.events") })
			ps = append(ps, processing(id, "msg-"+id, batchT1, 30*time.Second))
		}
		later := batchT1.Add(time.Minute) // evt_c2's lease lapsed: taken over
		var cs []consume.Completion
		for _, p := range ps {
			cs = append(cs, consume.Completion{Row: p.Row, Owner: p.Owner, Now: later})
		}
		cs = append(cs, cs[0]) // completed twice: the repeat finds it done
		w.each(func(b *leaseBundle) {
			for _, r := range b.events.BeginProcessingBatch(ctx, ps) {
				require.Equal(t, consume.Claimed, r.Claim.State)
			}
			c, err := b.events.BeginProcessing(ctx, processing("evt_c2", "msg-new", later, 30*time.Second))
			require.NoError(t, err)
			require.Equal(t, consume.Claimed, c.State)
		})
		w.batch.env.Calls.Reset()
		got := w.batch.events.MarkCompletedBatch(ctx, cs)
		var want []error
		for _, c := range cs {
			want = append(want, w.single.events.MarkCompleted(ctx, c))
		}
		require.Equal(t, want, got)
		require.Equal(t, []error{nil, outbox.ErrLeaseLost, nil, outbox.ErrLeaseLost}, got)
		w.requireSameRows(t, refsOf(ps))
		require.Equal(t, "msg-new", w.batch.row(t, "evt_c2", "a.events").LeaseOwner)
		require.Equal(t, outbox.StatusCompleted, w.batch.row(t, "evt_c1", "a.events").Status)
		if w.local {
			require.Equal(t, 1, w.batch.env.Calls.Count("DynamoDB", "BatchExecuteStatement"))
			require.Equal(t, 1, w.batch.env.Calls.Count("DynamoDB", "UpdateItem"), "only the repeat took the single path")
		}

		// A failed call: every completion takes the single path.
		w.each(func(b *leaseBundle) {
			b.commit(t, "evt_c4", "ingest", time.Minute, "a.events")
			_, err := b.events.BeginProcessing(ctx, processing("evt_c4", "msg-evt_c4", batchT1, 30*time.Second))
			require.NoError(t, err)
		})
		w.batch.env.Faults.Add(awslocal.Fault{Operation: "BatchExecuteStatement", Times: 1})
		c4 := consume.Completion{Row: outbox.RowRef{Key: "evt_c4", Topic: "a.events"}, Owner: "msg-evt_c4", Now: later}
		require.Equal(t, []error{nil, outbox.ErrLeaseLost}, w.batch.events.MarkCompletedBatch(ctx, []consume.Completion{c4, cs[1]}))
		require.NoError(t, w.single.events.MarkCompleted(ctx, c4))
		w.requireSameRows(t, []outbox.RowRef{c4.Row})
	})
}

// Metered (internal/observe/costmodel), a batch claim of fresh rows costs
// the single claims' write units, and a refused statement is billed like a
// refused UpdateItem on top of the single claim its row then takes.
func TestBatchClaimIsMeteredLikeTheSingleClaims(t *testing.T) {
	t.Parallel()
	emu := awslocaltest.SharedDynamoDBLocal(t)
	metered := func(t *testing.T) (*leaseBundle, *costmodel.Meter) {
		env := awslocaltest.NewEnv(t, awslocaltest.WithEmulators(emu))
		peek := awslocal.NewDynamoDBClient(env.Emulators.Config(), env.Emulators.DynamoDBEndpoint)
		m := costmodel.NewMeter(peek, env.Prefix)
		client := awslocal.NewDynamoDBClient(env.Emulators.Config(), env.Emulators.DynamoDBEndpoint, func(o *dynamodb.Options) {
			o.APIOptions = append(o.APIOptions, m.APIOption)
		})
		return &leaseBundle{env: env, events: &dynamo.Events{Client: client, Table: env.Resources.EventsTable}}, m
	}
	wru := func(m *costmodel.Meter) float64 { u, _ := m.Snapshot(); return u.WRU }
	batch, bm := metered(t)
	single, sm := metered(t)
	w := &batchTwins{batch: batch, single: single, local: true}
	var ps []consume.Processing
	for i := range 5 {
		id := fmt.Sprintf("evt_m%d", i)
		w.each(func(b *leaseBundle) { b.commit(t, id, "ingest", time.Minute, "a.events") })
		ps = append(ps, processing(id, "msg-"+id, batchT1, 30*time.Second))
	}
	bm.Reset()
	sm.Reset()
	require.Equal(t, withoutRoom(w.singleClaims(t, ps)), withoutRoom(w.batch.events.BeginProcessingBatch(context.Background(), ps)))
	require.Positive(t, wru(sm))
	require.Equal(t, wru(sm), wru(bm), "fresh rows: the same units")

	var mixed []consume.Processing
	w.each(func(b *leaseBundle) { mixed = seedMixed(t, b) })
	bm.Reset()
	sm.Reset()
	require.Equal(t, withoutRoom(w.singleClaims(t, mixed)), withoutRoom(w.batch.events.BeginProcessingBatch(context.Background(), mixed)))
	// 11 rows batched (the repeat is not): the fresh one and the one out
	// of the due index went through, 8 were refused and took the single
	// path.
	require.GreaterOrEqual(t, wru(bm)-wru(sm), 8.0, "every refused statement is billed")
}
