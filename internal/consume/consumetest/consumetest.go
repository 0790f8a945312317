// Package consumetest is the contract suite of consume.Rows, the (event,
// topic) idempotency record a consumer claims before its side effect: a
// claim on a missing row creates it (only while the event's ledger item
// exists), a live lease is busy, completed is never reclaimed, a claim
// counts its message's attempts, a write after a lost lease is
// outbox.ErrLeaseLost, and every delivery attempt is kept on the row with
// its outcome (an attempt whose lease ended without one as lost). Every implementation runs
// Exercise; the DynamoDB adapter runs it against the emulators.
package consumetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// Store is the rows as a consumer uses them, with the ledger the suite
// arranges events through.
type Store interface {
	consume.Rows
	ingest.Ledger
}

const topic = "a.events"

// t0 is near the wall clock (testkit.Recent): the rows and ledger
// records live in the events table, whose TTL DynamoDB Local enforces.
var t0 = testkit.Recent()

// commit stores an event with its row in status (pending rows leased to
// "ingest" until t0) and returns its row reference.
func commit(t *testing.T, s Store, id string, status outbox.Status) outbox.RowRef {
	t.Helper()
	rec, rows := testkit.Stored(testkit.Event(id, "content.published", "cms", `{"a":1}`), []string{topic}, t0, status)
	require.NoError(t, s.Commit(context.Background(), ingest.CommitParams{Record: rec, Rows: rows}))
	return outbox.RowRef{Key: rec.Key, Topic: topic}
}

func processing(ref outbox.RowRef, owner string, now time.Time) consume.Processing {
	return consume.Processing{Row: ref, EventID: "evt", TenantID: "acme", Type: "content.published", Owner: owner, Until: now.Add(30 * time.Second), Now: now}
}

func row(t *testing.T, s Store, ref outbox.RowRef) outbox.Row {
	t.Helper()
	_, rows, err := s.Load(context.Background(), ref.Key)
	require.NoError(t, err)
	for _, r := range rows {
		if r.Topic == ref.Topic {
			return r
		}
	}
	t.Fatalf("no row %s", ref)
	return outbox.Row{}
}

// Exercise runs the contract against fresh stores from newStore.
func Exercise(t *testing.T, newStore func(t *testing.T) Store) {
	t.Helper()
	ctx := context.Background()

	t.Run("AClaimTakesAnEnqueuedRowAndALiveLeaseIsBusy", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ref := commit(t, s, "evt_busy", outbox.StatusEnqueued)
		c, err := s.BeginProcessing(ctx, processing(ref, "msg-1", t0))
		require.NoError(t, err)
		require.Equal(t, consume.Claimed, c.State)
		r := row(t, s, ref)
		require.Equal(t, outbox.StatusProcessing, r.Status)
		require.Equal(t, "msg-1", r.LeaseOwner)
		require.True(t, r.LeaseUntil.Equal(t0.Add(30*time.Second)))

		c, err = s.BeginProcessing(ctx, processing(ref, "msg-2", t0.Add(10*time.Second)))
		require.NoError(t, err)
		require.Equal(t, consume.Busy, c.State)
		require.True(t, c.LeaseUntil.Equal(t0.Add(30*time.Second)), "busy says until when")
	})

	t.Run("AConsumerOvertakesTheSendersLease", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ref := commit(t, s, "evt_overtake", outbox.StatusPending)
		// The message is on the queue already: the consumer must not wait
		// for the sender's outcome write.
		c, err := s.BeginProcessing(ctx, processing(ref, "msg-1", t0.Add(-time.Second)))
		require.NoError(t, err)
		require.Equal(t, consume.Claimed, c.State)
	})

	t.Run("AnExpiredLeaseIsTakenOverAndTheOldOwnerLosesIt", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ref := commit(t, s, "evt_expired", outbox.StatusEnqueued)
		_, err := s.BeginProcessing(ctx, processing(ref, "msg-1", t0))
		require.NoError(t, err)
		later := t0.Add(31 * time.Second)
		c, err := s.BeginProcessing(ctx, processing(ref, "msg-2", later))
		require.NoError(t, err)
		require.Equal(t, consume.Claimed, c.State)
		require.ErrorIs(t, s.MarkCompleted(ctx, consume.Completion{Row: ref, Owner: "msg-1", Now: later}), outbox.ErrLeaseLost)
		require.ErrorIs(t, s.MarkRetry(ctx, consume.Release{Row: ref, Owner: "msg-1", LastError: "late", RetryAt: later, Now: later}), outbox.ErrLeaseLost)
		require.Equal(t, "msg-2", row(t, s, ref).LeaseOwner)
	})

	t.Run("CompletedIsNeverReclaimed", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ref := commit(t, s, "evt_done", outbox.StatusEnqueued)
		_, err := s.BeginProcessing(ctx, processing(ref, "msg-1", t0))
		require.NoError(t, err)
		require.NoError(t, s.MarkCompleted(ctx, consume.Completion{Row: ref, Owner: "msg-1", Now: t0.Add(time.Second)}))
		r := row(t, s, ref)
		require.Equal(t, outbox.StatusCompleted, r.Status)
		require.Empty(t, r.LeaseOwner)
		for _, at := range []time.Duration{time.Second, time.Hour, 30 * 24 * time.Hour} {
			c, err := s.BeginProcessing(ctx, processing(ref, "msg-2", t0.Add(at)))
			require.NoError(t, err)
			require.Equal(t, consume.AlreadyCompleted, c.State, "after %s", at)
		}
		require.ErrorIs(t, s.MarkCompleted(ctx, consume.Completion{Row: ref, Owner: "msg-1", Now: t0.Add(time.Hour)}), outbox.ErrLeaseLost, "completed once")
	})

	t.Run("ARetryHandsTheRowBack", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ref := commit(t, s, "evt_retry", outbox.StatusEnqueued)
		_, err := s.BeginProcessing(ctx, processing(ref, "msg-1", t0))
		require.NoError(t, err)
		back := t0.Add(5 * time.Second)
		require.NoError(t, s.MarkRetry(ctx, consume.Release{Row: ref, Owner: "msg-1", LastError: "subscriber answered 503", RetryAt: back, Now: t0.Add(time.Second)}))
		r := row(t, s, ref)
		require.Equal(t, outbox.StatusEnqueued, r.Status)
		require.Empty(t, r.LeaseOwner)
		require.Equal(t, "subscriber answered 503", r.LastError)
		c, err := s.BeginProcessing(ctx, processing(ref, "msg-1", back))
		require.NoError(t, err)
		require.Equal(t, consume.Claimed, c.State, "the redelivered message claims it again")
	})

	t.Run("AClaimCountsTheAttemptsOfItsMessage", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ref := commit(t, s, "evt_attempts", outbox.StatusEnqueued)
		at := t0
		claim := func(owner string) int {
			t.Helper()
			c, err := s.BeginProcessing(ctx, processing(ref, owner, at))
			require.NoError(t, err)
			require.Equal(t, consume.Claimed, c.State)
			at = at.Add(time.Second)
			require.NoError(t, s.MarkRetry(ctx, consume.Release{Row: ref, Owner: owner, LastError: "503", RetryAt: at, Now: at}))
			return c.Attempt
		}
		require.Equal(t, 1, claim("msg-1"))
		require.Equal(t, 2, claim("msg-1"), "the same message again")
		require.Equal(t, 3, claim("msg-1"))
		require.Equal(t, 1, claim("msg-2"), "another message of the row (a replay, a resend) starts again")
		require.Equal(t, 2, claim("msg-2"))

		other := outbox.RowRef{Key: ref.Key, Topic: "b.events"} // created by the claim
		c, err := s.BeginProcessing(ctx, processing(other, "msg-3", at))
		require.NoError(t, err)
		require.Equal(t, consume.Claimed, c.State)
		require.Equal(t, 1, c.Attempt)
	})

	t.Run("AClaimOnAMissingRowCreatesItWhileTheLedgerExists", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ref := commit(t, s, "evt_norow", outbox.StatusEnqueued)
		other := outbox.RowRef{Key: ref.Key, Topic: "b.events"} // a topic the event has no row for
		c, err := s.BeginProcessing(ctx, processing(other, "msg-1", t0))
		require.NoError(t, err)
		require.Equal(t, consume.Claimed, c.State)
		r := row(t, s, other)
		require.Equal(t, outbox.StatusProcessing, r.Status)
		require.Equal(t, "msg-1", r.LeaseOwner)
	})

	t.Run("AClaimWithoutLedgerIsLedgerMissingAndWritesNothing", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ref := outbox.RowRef{Key: "acme/evt_gone", Topic: topic}
		c, err := s.BeginProcessing(ctx, processing(ref, "msg-1", t0))
		require.NoError(t, err)
		require.Equal(t, consume.LedgerMissing, c.State)
		_, rows, err := s.Load(ctx, ref.Key)
		if err == nil {
			require.Empty(t, rows, "no row outlives its ledger item")
		}
	})

	t.Run("OnlyOneConcurrentClaimWins", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ref := commit(t, s, "evt_race", outbox.StatusEnqueued)
		var claimed, busy atomic.Int32
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				c, err := s.BeginProcessing(ctx, processing(ref, fmt.Sprint("msg-", i), t0))
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				switch c.State {
				case consume.Claimed:
					claimed.Add(1)
				case consume.Busy:
					busy.Add(1)
				}
			})
		}
		wg.Wait()
		require.EqualValues(t, 1, claimed.Load())
		require.EqualValues(t, 7, busy.Load())
	})

	t.Run("EveryAttemptIsKeptWithItsOutcome", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ref := commit(t, s, "evt_kept", outbox.StatusEnqueued)
		c, err := s.BeginProcessing(ctx, processing(ref, "msg-1", t0))
		require.NoError(t, err)
		require.Equal(t, consume.Claimed, c.State)
		require.Equal(t, 1, c.Log.Next, "the dispatch's first attempt")
		failed := outbox.Attempt{N: c.Log.Next, At: t0, Duration: 40 * time.Millisecond, Delivery: outbox.DeliveryOriginal,
			Outcome: outbox.OutcomeFailed, Status: 503, Answer: "upstream busy, try later"}
		require.NoError(t, s.MarkRetry(ctx, consume.Release{Row: ref, Owner: "msg-1", LastError: "503", RetryAt: t0.Add(5 * time.Second), Now: t0.Add(time.Second), Attempt: failed, Log: c.Log}))

		at := t0.Add(5 * time.Second)
		c, err = s.BeginProcessing(ctx, processing(ref, "msg-1", at))
		require.NoError(t, err)
		require.Equal(t, 2, c.Log.Next)
		done := outbox.Attempt{N: c.Log.Next, At: at, Duration: 12 * time.Millisecond, Delivery: outbox.DeliveryRetry,
			Outcome: outbox.OutcomeDelivered, Status: 200, Answer: `{"ok":true}`}
		require.NoError(t, s.MarkCompleted(ctx, consume.Completion{Row: ref, Owner: "msg-1", Now: at.Add(time.Second), Attempt: done, Log: c.Log}))

		got := row(t, s, ref).DeliveryAttempts
		require.Len(t, got, 2)
		for i, want := range []outbox.Attempt{failed, done} {
			require.Equal(t, want.N, got[i].N)
			require.True(t, want.At.Equal(got[i].At), "attempt %d at %s, want %s", want.N, got[i].At, want.At)
			require.Equal(t, want.Duration, got[i].Duration)
			require.Equal(t, want.Delivery, got[i].Delivery)
			require.Equal(t, want.Outcome, got[i].Outcome)
			require.Equal(t, want.Status, got[i].Status)
			require.Equal(t, want.Answer, got[i].Answer)
		}
	})

	t.Run("AnAttemptWhoseLeaseEndedWithoutAnOutcomeIsLost", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ref := commit(t, s, "evt_lost", outbox.StatusEnqueued)
		_, err := s.BeginProcessing(ctx, processing(ref, "msg-1", t0))
		require.NoError(t, err)
		later := t0.Add(31 * time.Second) // msg-1's invocation died
		c, err := s.BeginProcessing(ctx, processing(ref, "msg-2", later))
		require.NoError(t, err)
		require.Equal(t, consume.Claimed, c.State)
		require.NotNil(t, c.Log.Lost, "the claim found msg-1's attempt without an outcome")
		require.Equal(t, 1, c.Log.Lost.N)
		require.Equal(t, 2, c.Log.Next)
		done := outbox.Attempt{N: c.Log.Next, At: later, Delivery: outbox.DeliveryRetry, Outcome: outbox.OutcomeDelivered, Status: 204}
		require.NoError(t, s.MarkCompleted(ctx, consume.Completion{Row: ref, Owner: "msg-2", Now: later, Attempt: done, Log: c.Log}))
		got := row(t, s, ref).DeliveryAttempts
		require.Len(t, got, 2)
		require.Equal(t, outbox.OutcomeLost, got[0].Outcome)
		require.True(t, got[0].At.Equal(t0), "lost since its claim")
		require.Equal(t, outbox.OutcomeDelivered, got[1].Outcome)
	})

	t.Run("ARowKeepsItsLatestAttemptsAndAnswers", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		ref := commit(t, s, "evt_many", outbox.StatusEnqueued)
		at := t0
		total := outbox.KeptAttempts + 3
		for range total {
			c, err := s.BeginProcessing(ctx, processing(ref, "msg-1", at))
			require.NoError(t, err)
			require.Equal(t, consume.Claimed, c.State)
			a := outbox.Attempt{N: c.Log.Next, At: at, Delivery: outbox.DeliveryRetry, Outcome: outbox.OutcomeFailed, Status: 500, Answer: fmt.Sprintf("failure %d", c.Log.Next)}
			at = at.Add(time.Second)
			require.NoError(t, s.MarkRetry(ctx, consume.Release{Row: ref, Owner: "msg-1", LastError: "500", RetryAt: at, Now: at, Attempt: a, Log: c.Log}))
		}
		got := row(t, s, ref).DeliveryAttempts
		require.Len(t, got, outbox.KeptAttempts)
		require.Equal(t, total-outbox.KeptAttempts+1, got[0].N, "the oldest attempts leave first")
		require.Equal(t, total, got[len(got)-1].N)
		for i, a := range got {
			if i < len(got)-outbox.KeptAnswers {
				require.Empty(t, a.Answer, "attempt %d: only the latest keep their answers", a.N)
				continue
			}
			require.Equal(t, fmt.Sprintf("failure %d", a.N), a.Answer)
		}
	})
}
