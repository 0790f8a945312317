// Package outboxsweeptest is the contract suite of outboxsweep.Rows, the outbox rows as
// the sweeper reads and claims them: due rows paged per partition, oldest
// first; claims conditional on the row still being as the sweeper saw it;
// settlements of processing rows likewise; ledger items read in bulk; a
// pending row its lease owner's receipt names read as enqueued; and
// (ExerciseErased) rows of erased events leave the due index when their
// send fails and are never abandoned into an incident. Every
// implementation runs both; the DynamoDB adapter runs them against the
// emulators.
package outboxsweeptest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/outboxsweep"
)

// Store is the rows as the sweeper uses them, with the ledger the suite
// arranges events through.
type Store interface {
	outboxsweep.Rows
	ingest.Ledger
	outbox.Receipts
}

const topic = "a.events"

// t0 is near the wall clock (testkit.Recent): the rows and ledger
// records live in the events table, whose TTL DynamoDB Local enforces.
var t0 = testkit.Recent()

// commit stores an event with one row in status, due (and, pending or
// processing, leased until) at `due`.
func commit(t *testing.T, s Store, id string, status outbox.Status, due time.Time) outbox.Row {
	t.Helper()
	return commitHeld(t, s, id, status, due, "holder")
}

// commitHeld is commit with a pending or processing row held by owner.
func commitHeld(t *testing.T, s Store, id string, status outbox.Status, due time.Time, owner string) outbox.Row {
	t.Helper()
	rec, rows := testkit.Stored(testkit.Event(id, "content.published", "cms", `{"a":1}`), []string{topic}, t0.Add(-time.Hour), status)
	rows[0].NextRetryAt = due
	if status == outbox.StatusPending || status == outbox.StatusProcessing {
		rows[0].LeaseOwner, rows[0].LeaseUntil = owner, due
	}
	require.NoError(t, s.Commit(context.Background(), ingest.CommitParams{Record: rec, Rows: rows}))
	return rows[0]
}

// due reads every partition of the due index due at now, pageSize at a
// time, and keeps the rows in status.
func due(t *testing.T, s Store, status outbox.Status, now time.Time, pageSize int) []outbox.Row {
	t.Helper()
	var out []outbox.Row
	for _, r := range dueAll(t, s, now, pageSize) {
		if r.Status == status {
			out = append(out, r)
		}
	}
	return out
}

// dueAll reads every partition of the due index due at now.
func dueAll(t *testing.T, s Store, now time.Time, pageSize int) []outbox.Row {
	t.Helper()
	var out []outbox.Row
	for shard := range s.Shards() {
		var partition []outbox.Row
		cursor := ""
		for pages := 0; ; pages++ {
			require.Less(t, pages, 100, "the cursor ends")
			p, err := s.DuePage(context.Background(), outboxsweep.DueParams{Shard: shard, Now: now, Limit: pageSize, Cursor: cursor})
			require.NoError(t, err)
			require.LessOrEqual(t, len(p.Rows), pageSize)
			partition = append(partition, p.Rows...)
			if p.Cursor == "" {
				break
			}
			cursor = p.Cursor
		}
		require.True(t, slices.IsSortedFunc(partition, func(a, b outbox.Row) int { return a.NextRetryAt.Compare(b.NextRetryAt) }),
			"partition %d oldest first", shard)
		out = append(out, partition...)
	}
	return out
}

func keys(rows []outbox.Row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Key)
	}
	return out
}

// Exercise runs the contract against fresh stores from newStore.
func Exercise(t *testing.T, newStore func(t *testing.T) Store) {
	t.Helper()
	ctx := context.Background()

	t.Run("DuePagesHoldExactlyTheDueRows", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		require.Positive(t, s.Shards())
		var want []string
		for i := range 12 {
			r := commit(t, s, fmt.Sprintf("evt_due_%02d", i), outbox.StatusPending, t0.Add(-time.Duration(i+1)*time.Minute))
			want = append(want, r.Key)
		}
		commit(t, s, "evt_later", outbox.StatusPending, t0.Add(time.Minute))
		commit(t, s, "evt_failed", outbox.StatusFailed, t0.Add(-time.Minute))
		commit(t, s, "evt_processing", outbox.StatusProcessing, t0.Add(-time.Minute))
		commit(t, s, "evt_enqueued", outbox.StatusEnqueued, t0.Add(-time.Minute))
		commit(t, s, "evt_completed", outbox.StatusCompleted, t0.Add(-time.Minute))
		require.ElementsMatch(t, want, keys(due(t, s, outbox.StatusPending, t0, 2)))
		require.Len(t, due(t, s, outbox.StatusFailed, t0, 10), 1)
		require.Len(t, due(t, s, outbox.StatusProcessing, t0, 10), 1)
		require.Len(t, dueAll(t, s, t0, 3), 14, "a row created enqueued or with its outcome is not in the due index")
		require.Empty(t, dueAll(t, s, t0.Add(-time.Hour), 10), "nothing is due before its time")
	})

	t.Run("AClaimIsConditionalOnTheRowAsSeen", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		seen := commit(t, s, "evt_seen", outbox.StatusPending, t0.Add(-time.Minute))
		stale := seen
		stale.Attempts = seen.Attempts + 1
		ok, err := s.ClaimDue(ctx, outboxsweep.DueClaim{Seen: stale, Owner: "sweeper-1", Now: t0, Lease: time.Minute})
		require.NoError(t, err)
		require.False(t, ok, "a row that moved on (another attempt) is not claimed from a stale read")
		ok, err = s.ClaimDue(ctx, outboxsweep.DueClaim{Seen: seen, Owner: "sweeper-1", Now: t0, Lease: time.Minute})
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = s.ClaimDue(ctx, outboxsweep.DueClaim{Seen: seen, Owner: "sweeper-2", Now: t0.Add(time.Second), Lease: time.Minute})
		require.NoError(t, err)
		require.False(t, ok, "a live lease is busy")
		require.Empty(t, due(t, s, outbox.StatusPending, t0.Add(30*time.Second), 10), "a claimed row is not due until its lease ends")
		require.ErrorIs(t, s.MarkEnqueued(ctx, seen.Ref(), "sweeper-2", t0), outbox.ErrLeaseLost)
		require.NoError(t, s.MarkEnqueued(ctx, seen.Ref(), "sweeper-1", t0.Add(time.Second)))
		require.Empty(t, due(t, s, outbox.StatusPending, t0.Add(time.Hour), 10))
		got := due(t, s, outbox.StatusEnqueued, t0.Add(time.Minute), 10)
		require.Len(t, got, 1, "an enqueued row stays due at its lease's end (the sweeper takes it out then)")
	})

	t.Run("OnlyOneConcurrentSweeperClaimsARow", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		seen := commit(t, s, "evt_race", outbox.StatusFailed, t0.Add(-time.Minute))
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				ok, err := s.ClaimDue(ctx, outboxsweep.DueClaim{Seen: seen, Owner: fmt.Sprint("sweeper-", i), Now: t0, Lease: time.Minute})
				if err != nil {
					t.Errorf("claim due: %v", err)
				}
				if ok {
					wins.Add(1)
				}
			})
		}
		wg.Wait()
		require.EqualValues(t, 1, wins.Load())
	})

	t.Run("AFailedSendIsDueAgainAtItsRetryTime", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		seen := commit(t, s, "evt_retry", outbox.StatusPending, t0.Add(-time.Minute))
		ok, err := s.ClaimDue(ctx, outboxsweep.DueClaim{Seen: seen, Owner: "sweeper", Now: t0, Lease: time.Minute})
		require.NoError(t, err)
		require.True(t, ok)
		next := t0.Add(4 * time.Minute)
		require.NoError(t, s.MarkFailed(ctx, outbox.Failure{Row: seen.Ref(), EventID: seen.EventID, Owner: "sweeper", Attempts: 1, Err: "throttled", NextRetryAt: next, Now: t0}))
		require.Empty(t, due(t, s, outbox.StatusFailed, next.Add(-time.Second), 10))
		got := due(t, s, outbox.StatusFailed, next, 10)
		require.Len(t, got, 1)
		require.Equal(t, 1, got[0].Attempts)
		require.Equal(t, "throttled", got[0].LastError)
	})

	t.Run("LedgersReadsTheExistingOnes", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		a := commit(t, s, "evt_a", outbox.StatusPending, t0)
		b := commit(t, s, "evt_b", outbox.StatusPending, t0)
		got, err := s.Ledgers(ctx, []string{a.Key, b.Key, a.Key, "acme/evt_missing"})
		require.NoError(t, err)
		require.Len(t, got, 2, "missing ones are absent, repeated ones read once")
		require.Equal(t, "evt_a", got[a.Key].Event.ID)
		require.Equal(t, "evt_b", got[b.Key].Event.ID)
	})

	t.Run("ASettlementIsConditionalOnTheRowAsSeen", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		seen := commit(t, s, "evt_settle", outbox.StatusProcessing, t0.Add(-time.Hour))
		got := due(t, s, outbox.StatusProcessing, t0.Add(-30*time.Minute), 10)
		require.Equal(t, []string{seen.Key}, keys(got), "a processing row is found by its due time")
		moved := seen
		moved.LeaseOwner = "another-message"
		ok, err := s.Settle(ctx, outboxsweep.Settlement{Seen: moved, Status: outbox.StatusCompleted, Note: "x", Now: t0})
		require.NoError(t, err)
		require.False(t, ok, "not as seen")
		ok, err = s.Settle(ctx, outboxsweep.Settlement{Seen: seen, Status: outbox.StatusCompleted, Note: "settled: outcome lost", Now: t0})
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = s.Settle(ctx, outboxsweep.Settlement{Seen: seen, Status: outbox.StatusDLQ, Note: "again", Now: t0})
		require.NoError(t, err)
		require.False(t, ok, "settled once")
		require.Empty(t, dueAll(t, s, t0.Add(time.Hour), 10), "a settled row leaves the due index")
		_, rows, err := s.Load(ctx, seen.Key)
		require.NoError(t, err)
		require.Equal(t, outbox.StatusCompleted, rows[0].Status)
		require.Empty(t, rows[0].LeaseOwner)
	})

	t.Run("ARescheduleIsConditionalOnTheRowAsSeen", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		enq := commit(t, s, "evt_enq", outbox.StatusPending, t0.Add(-time.Minute))
		ok, err := s.ClaimDue(ctx, outboxsweep.DueClaim{Seen: enq, Owner: "sweeper", Now: t0, Lease: time.Minute})
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, s.MarkEnqueued(ctx, enq.Ref(), "sweeper", t0))
		got := due(t, s, outbox.StatusEnqueued, t0.Add(time.Minute), 10)
		require.Len(t, got, 1)
		stale := got[0]
		stale.UpdatedAt = stale.UpdatedAt.Add(-time.Second)
		ok, err = s.Reschedule(ctx, outboxsweep.Reschedule{Seen: stale})
		require.NoError(t, err)
		require.False(t, ok, "not as seen")
		ok, err = s.Reschedule(ctx, outboxsweep.Reschedule{Seen: got[0]})
		require.NoError(t, err)
		require.True(t, ok)
		require.Empty(t, dueAll(t, s, t0.Add(time.Hour), 10), "out of the due index")
		_, rows, err := s.Load(ctx, enq.Key)
		require.NoError(t, err)
		require.Equal(t, outbox.StatusEnqueued, rows[0].Status, "the row itself is unchanged")
		require.True(t, rows[0].UpdatedAt.Equal(got[0].UpdatedAt))

		proc := commit(t, s, "evt_proc", outbox.StatusProcessing, t0.Add(-time.Minute))
		later := t0.Add(45 * time.Minute)
		ok, err = s.Reschedule(ctx, outboxsweep.Reschedule{Seen: proc, At: later})
		require.NoError(t, err)
		require.True(t, ok)
		require.Empty(t, dueAll(t, s, later.Add(-time.Second), 10))
		require.Equal(t, []string{proc.Key}, keys(due(t, s, outbox.StatusProcessing, later, 10)), "due again at its new time")
	})

	t.Run("ARowItsOwnersReceiptNamesReadsAsEnqueued", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		due0 := t0.Add(-time.Minute) // the lease ended: due
		holder, other := outbox.BatchOwner("holder"), outbox.BatchOwner("other")
		r1 := commitHeld(t, s, "evt_rcpt1", outbox.StatusPending, due0, holder)
		r2 := commitHeld(t, s, "evt_rcpt2", outbox.StatusPending, due0, holder)
		r3 := commitHeld(t, s, "evt_rcpt3", outbox.StatusPending, due0, holder)
		require.NoError(t, s.RecordSent(ctx, outbox.Receipt{Owner: holder, Rows: []outbox.RowRef{r1.Ref(), r2.Ref()}, Now: t0.Add(-2 * time.Minute)}))
		require.NoError(t, s.RecordSent(ctx, outbox.Receipt{Owner: other, Rows: []outbox.RowRef{r3.Ref()}, Now: t0.Add(-2 * time.Minute)}))

		byKey := map[string]outbox.Row{}
		for _, r := range dueAll(t, s, t0, 10) {
			byKey[r.Key] = r
		}
		require.Len(t, byKey, 3)
		for _, k := range []string{r1.Key, r2.Key} {
			require.Equal(t, outbox.StatusEnqueued, byKey[k].Status, k)
			require.True(t, byKey[k].Receipted, k)
			require.Equal(t, holder, byKey[k].LeaseOwner, "%s: stored under the lease it was sent by", k)
			require.False(t, byKey[k].Leased(t0), "%s: not held, as after a mark", k)
		}
		require.Equal(t, outbox.StatusPending, byKey[r3.Key].Status, "another owner's receipt names it, not its own")
		require.False(t, byKey[r3.Key].Receipted)
		_, rows, err := s.Load(ctx, r1.Key)
		require.NoError(t, err)
		require.Equal(t, outbox.StatusEnqueued, rows[0].Status, "Load reads the receipt too")
		require.True(t, rows[0].Receipted)

		stale := byKey[r2.Key]
		stale.UpdatedAt = stale.UpdatedAt.Add(-time.Second)
		ok, err := s.Reschedule(ctx, outboxsweep.Reschedule{Seen: stale})
		require.NoError(t, err)
		require.False(t, ok, "not as seen")
		for _, k := range []string{r1.Key, r2.Key} {
			ok, err := s.Reschedule(ctx, outboxsweep.Reschedule{Seen: byKey[k], Now: t0})
			require.NoError(t, err)
			require.True(t, ok, k)
			_, rows, err := s.Load(ctx, k)
			require.NoError(t, err)
			require.Equal(t, outbox.StatusEnqueued, rows[0].Status, k)
			require.True(t, rows[0].UpdatedAt.Equal(t0), "%s: recorded now", k)
			require.False(t, rows[0].Receipted, "%s: the row records it now", k)
			require.Empty(t, rows[0].LeaseOwner, "%s: lease released, as a mark releases it", k)
		}
		require.Equal(t, []string{r3.Key}, keys(dueAll(t, s, t0.Add(time.Hour), 10)), "the receipted rows left the due index")
		ok, err = s.ClaimDue(ctx, outboxsweep.DueClaim{Seen: byKey[r3.Key], Owner: "sweeper", Now: t0, Lease: time.Minute})
		require.NoError(t, err)
		require.True(t, ok, "a row no receipt of its owner names is sent again")
	})

}

// Erased is a store with what the suite needs about erased events: the
// abandon that opens incidents, the incidents it opens, and the erasure
// that marks an event's rows.
type Erased struct {
	Store     Store
	Abandoner outboxsweep.Abandoner
	Incidents incident.Store
	// Erase puts the erasure marker on the event's rows, as the subject
	// erasure does (they leave the due index).
	Erase func(t *testing.T, key string)
}

// ExerciseErased runs the contract for rows of erased events: a send that
// fails after its event was erased takes the row out of the due index (no
// claim would take it again: it would be skipped by every sweep and the
// outbox lag would grow until it expired), and an abandon after the
// erasure opens no incident (the payload would be copied into one after
// the erasure; docs/architecture.md §5, guarantee 12).
func ExerciseErased(t *testing.T, newErased func(t *testing.T) Erased) {
	t.Helper()
	ctx := context.Background()

	t.Run("AFailedSendOfAnErasedRowLeavesTheDueIndex", func(t *testing.T) {
		t.Parallel()
		e := newErased(t)
		s := e.Store
		kept := commitHeld(t, s, "evt_kept_fail", outbox.StatusPending, t0.Add(time.Minute), "sender")
		gone := commitHeld(t, s, "evt_erased_fail", outbox.StatusPending, t0.Add(time.Minute), "sender")
		e.Erase(t, gone.Key)
		next := t0.Add(2 * time.Minute)
		for _, r := range []outbox.Row{kept, gone} {
			require.NoError(t, s.MarkFailed(ctx, outbox.Failure{Row: r.Ref(), EventID: r.EventID, Owner: "sender", Attempts: 1, Err: "throttled", NextRetryAt: next, Now: t0}), r.Key)
		}
		require.Equal(t, []string{kept.Key}, keys(dueAll(t, s, t0.Add(time.Hour), 10)), "only the row a claim may take again is due")
		_, rows, err := s.Load(ctx, gone.Key)
		require.NoError(t, err)
		require.Equal(t, outbox.StatusFailed, rows[0].Status, "the failure is recorded")
		require.Equal(t, 1, rows[0].Attempts)
		require.Empty(t, rows[0].LeaseOwner, "lease released")
		require.False(t, rows[0].ErasedAt.IsZero(), "the marker stays")
		ok, err := s.ClaimDue(ctx, outboxsweep.DueClaim{Seen: rows[0], Owner: "sweeper", Now: t0.Add(time.Hour), Lease: time.Minute})
		require.NoError(t, err)
		require.False(t, ok, "never claimed again")

		// Another owner's failure of an erased row is a lost lease.
		other := commitHeld(t, s, "evt_erased_other", outbox.StatusPending, t0.Add(time.Minute), "sender")
		e.Erase(t, other.Key)
		require.ErrorIs(t, s.MarkFailed(ctx, outbox.Failure{Row: other.Ref(), EventID: other.EventID, Owner: "intruder", Attempts: 1, Err: "x", NextRetryAt: next, Now: t0}), outbox.ErrLeaseLost)
	})

	t.Run("AnAbandonOfAnErasedRowOpensNoIncident", func(t *testing.T) {
		t.Parallel()
		e := newErased(t)
		s := e.Store
		kept := commitHeld(t, s, "evt_kept_last", outbox.StatusPending, t0.Add(time.Minute), "sweeper")
		gone := commitHeld(t, s, "evt_erased_last", outbox.StatusPending, t0.Add(time.Minute), "sweeper")
		e.Erase(t, gone.Key)
		for _, r := range []outbox.Row{kept, gone} {
			f := outbox.Failure{Row: r.Ref(), EventID: r.EventID, Owner: "sweeper", Attempts: 5, Err: "queue unavailable", Now: t0}
			body := []byte(`{"email":"ann@example.test"}`)
			dl := incident.DeadLetter{EventKey: r.Key, EventID: r.EventID, TenantID: r.TenantID, Topic: r.Topic, SourceQueue: incident.SourceOutbox,
				ErrorCode: incident.CodeOutboxExhausted, ErrorMessage: incident.MessageOutboxExhausted, FailedAt: t0, By: incident.ActorSweeper,
				Body: incident.Body{Inline: body, Size: len(body), SHA256: "x"}}
			_, err := e.Abandoner.Abandon(ctx, f, dl)
			if r.Key == gone.Key {
				require.ErrorIs(t, err, outbox.ErrErased, "the erasure came first")
				_, err = e.Incidents.Get(ctx, incident.ID(r.Key, r.Topic))
				require.ErrorIs(t, err, incident.ErrNotFound, "no incident holds the payload")
				continue
			}
			require.NoError(t, err)
		}
		_, err := e.Incidents.Get(ctx, incident.ID(kept.Key, kept.Topic))
		require.NoError(t, err, "an event not erased is abandoned to its incident")
		require.Empty(t, dueAll(t, s, t0.Add(time.Hour), 10), "the abandoned row has its outcome; the erased one left with its erasure")

		// A lost lease is still a lost lease.
		held := commitHeld(t, s, "evt_held", outbox.StatusPending, t0.Add(time.Minute), "sweeper")
		_, err = e.Abandoner.Abandon(ctx, outbox.Failure{Row: held.Ref(), EventID: held.EventID, Owner: "intruder", Attempts: 5, Err: "x", Now: t0},
			incident.DeadLetter{EventKey: held.Key, EventID: held.EventID, TenantID: held.TenantID, Topic: held.Topic, SourceQueue: incident.SourceOutbox, By: incident.ActorSweeper})
		require.ErrorIs(t, err, outbox.ErrLeaseLost)
	})
}
