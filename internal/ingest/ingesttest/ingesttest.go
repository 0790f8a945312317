// Package ingesttest is the contract suite of the event store ingest
// writes through: the ledger (ingest.Ledger: one transactional commit per
// event, exactly one winner) and the senders' side of the outbox rows
// (outbox.Store: lease-conditional claims and outcome writes), one event
// at a time and a batch at a time (CommitBatch, MarkEnqueuedBatch). Every
// implementation runs Exercise; the DynamoDB adapter runs it against the
// emulators.
package ingesttest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// Store is the event store as ingest and senders use it.
type Store interface {
	ingest.Ledger
	outbox.BatchMarker
}

// t0 is near the wall clock (testkit.Recent): the rows and ledger
// records live in the events table, whose TTL DynamoDB Local enforces.
var t0 = testkit.Recent()

// event is a stored event of tenant acme routed to topics, its rows
// pending and leased to "ingest" until t0+lease.
func event(id string, lease time.Duration, topics ...string) ingest.CommitParams {
	rec, rows := testkit.Stored(testkit.Event(id, "inquiry.created", "website", `{"a":1}`), topics, t0, outbox.StatusPending)
	for i := range rows {
		rows[i].LeaseOwner, rows[i].LeaseUntil, rows[i].NextRetryAt = "ingest", t0.Add(lease), t0.Add(lease)
	}
	return ingest.CommitParams{Record: rec, Rows: rows}
}

func row(t *testing.T, s Store, key, topic string) outbox.Row {
	t.Helper()
	_, rows, err := s.Load(context.Background(), key)
	require.NoError(t, err)
	for _, r := range rows {
		if r.Topic == topic {
			return r
		}
	}
	t.Fatalf("no row %s/%s", key, topic)
	return outbox.Row{}
}

// Exercise runs the contract against fresh stores from newStore.
func Exercise(t *testing.T, newStore func(t *testing.T) Store) {
	t.Helper()
	ctx := context.Background()

	t.Run("CommitThenLoadReturnsTheRecordAndItsRows", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		p := event("evt_load", time.Minute, "a.events", "b.events")
		require.NoError(t, s.Commit(ctx, p))
		rec, rows, err := s.Load(ctx, p.Record.Key)
		require.NoError(t, err)
		require.Equal(t, p.Record.Event.ID, rec.Event.ID)
		require.JSONEq(t, string(p.Record.Event.Payload), string(rec.Event.Payload))
		require.Equal(t, p.Record.PayloadHash, rec.PayloadHash)
		require.ElementsMatch(t, []string{"a.events", "b.events"}, rec.Topics)
		require.Len(t, rows, 2)
		for _, r := range rows {
			require.Equal(t, outbox.StatusPending, r.Status)
			require.Equal(t, "ingest", r.LeaseOwner)
			require.True(t, r.LeaseUntil.Equal(t0.Add(time.Minute)))
		}
	})

	t.Run("LoadOfAnUnknownEventIsNotFound", func(t *testing.T) {
		t.Parallel()
		_, _, err := newStore(t).Load(ctx, "acme/evt_nobody")
		require.ErrorIs(t, err, ledger.ErrNotFound)
	})

	t.Run("ASecondCommitOfTheSameEventExists", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		p := event("evt_twice", time.Minute, "a.events")
		require.NoError(t, s.Commit(ctx, p))
		// Another publisher's commit of the same event (the same owner's
		// retry of a commit whose answer was lost is idempotent on
		// DynamoDB: its request token is the same).
		again := event("evt_twice", time.Minute, "a.events")
		for i := range again.Rows {
			again.Rows[i].LeaseOwner = "ingest-other"
		}
		err := s.Commit(ctx, again)
		require.ErrorIs(t, err, ledger.ErrExists)
		var ex *ledger.ExistsError
		require.ErrorAs(t, err, &ex)
		_, rows, err := s.Load(ctx, p.Record.Key)
		require.NoError(t, err)
		require.Len(t, rows, 1, "nothing written twice")
	})

	t.Run("ConcurrentCommitsHaveExactlyOneWinner", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		var wins, exists atomic.Int32
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				// Eight publishers, each with its own owner (as ingest
				// gives every publish).
				p := event("evt_race", time.Minute, "a.events")
				for j := range p.Rows {
					p.Rows[j].LeaseOwner = fmt.Sprintf("ingest-%d", i)
				}
				err := s.Commit(ctx, p)
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, ledger.ErrExists):
					exists.Add(1)
				default:
					t.Errorf("commit: %v", err)
				}
			})
		}
		wg.Wait()
		require.EqualValues(t, 1, wins.Load())
		require.EqualValues(t, 7, exists.Load())
	})

	t.Run("AnEventStoredUnderItsLegacyKeyExists", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		legacy := event("evt_legacy", time.Minute, "a.events")
		legacy.Record.Key = ledger.LegacyKey("evt_legacy")
		for i := range legacy.Rows {
			legacy.Rows[i].Key = legacy.Record.Key
		}
		require.NoError(t, s.Commit(ctx, legacy))
		p := event("evt_legacy", time.Minute, "a.events")
		p.LegacyKey = ledger.LegacyKey("evt_legacy")
		require.ErrorIs(t, s.Commit(ctx, p), ledger.ErrExists)
		_, _, err := s.Load(ctx, p.Record.Key)
		require.ErrorIs(t, err, ledger.ErrNotFound, "nothing written under the new key")
	})

	t.Run("ALiveLeaseIsBusyAndAnExpiredOneIsTakenOver", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		p := event("evt_lease", time.Minute, "a.events")
		require.NoError(t, s.Commit(ctx, p))
		ref := outbox.RowRef{Key: p.Record.Key, Topic: "a.events"}
		ok, err := s.Claim(ctx, outbox.ClaimParams{Row: ref, Owner: "sweeper", Now: t0.Add(30 * time.Second), Lease: time.Minute})
		require.NoError(t, err)
		require.False(t, ok, "ingest still holds the row")
		ok, err = s.Claim(ctx, outbox.ClaimParams{Row: ref, Owner: "sweeper", Now: t0.Add(2 * time.Minute), Lease: time.Minute})
		require.NoError(t, err)
		require.True(t, ok, "an expired lease is taken over")
		r := row(t, s, ref.Key, ref.Topic)
		require.Equal(t, "sweeper", r.LeaseOwner)
		require.True(t, r.LeaseUntil.Equal(t0.Add(3*time.Minute)))
		require.ErrorIs(t, s.MarkEnqueued(ctx, ref, "ingest", t0.Add(2*time.Minute)), outbox.ErrLeaseLost, "the old owner's outcome is refused")
	})

	t.Run("OnlyOneConcurrentClaimWins", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		p := event("evt_claims", 0, "a.events")
		require.NoError(t, s.Commit(ctx, p))
		ref := outbox.RowRef{Key: p.Record.Key, Topic: "a.events"}
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				ok, err := s.Claim(ctx, outbox.ClaimParams{Row: ref, Owner: fmt.Sprint("sender-", i), Now: t0.Add(time.Second), Lease: time.Minute})
				if err != nil {
					t.Errorf("claim: %v", err)
				}
				if ok {
					wins.Add(1)
				}
			})
		}
		wg.Wait()
		require.EqualValues(t, 1, wins.Load())
	})

	t.Run("AMissingRowIsNotClaimed", func(t *testing.T) {
		t.Parallel()
		ok, err := newStore(t).Claim(ctx, outbox.ClaimParams{Row: outbox.RowRef{Key: "acme/evt_none", Topic: "a.events"}, Owner: "x", Now: t0, Lease: time.Minute})
		require.NoError(t, err)
		require.False(t, ok)
	})

	t.Run("TheOwnerMarksEnqueuedAndAnEnqueuedRowIsNotClaimedAgain", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		p := event("evt_enq", time.Minute, "a.events")
		require.NoError(t, s.Commit(ctx, p))
		ref := outbox.RowRef{Key: p.Record.Key, Topic: "a.events"}
		require.ErrorIs(t, s.MarkEnqueued(ctx, ref, "someone-else", t0), outbox.ErrLeaseLost)
		require.NoError(t, s.MarkEnqueued(ctx, ref, "ingest", t0.Add(time.Second)))
		r := row(t, s, ref.Key, ref.Topic)
		require.Equal(t, outbox.StatusEnqueued, r.Status)
		require.Empty(t, r.LeaseOwner)
		ok, err := s.Claim(ctx, outbox.ClaimParams{Row: ref, Owner: "sweeper", Now: t0.Add(time.Hour), Lease: time.Minute})
		require.NoError(t, err)
		require.False(t, ok, "an enqueued row is not sendable")
		require.ErrorIs(t, s.MarkEnqueued(ctx, ref, "ingest", t0.Add(time.Hour)), outbox.ErrLeaseLost, "marked once")
	})

	t.Run("AFailedSendIsRecordedReleasedAndClaimableWhenDue", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		p := event("evt_fail", time.Minute, "a.events")
		require.NoError(t, s.Commit(ctx, p))
		ref := outbox.RowRef{Key: p.Record.Key, Topic: "a.events"}
		next := t0.Add(2 * time.Minute)
		require.ErrorIs(t, s.MarkFailed(ctx, outbox.Failure{Row: ref, EventID: "evt_fail", Owner: "other", Attempts: 1, Err: "x", NextRetryAt: next, Now: t0}), outbox.ErrLeaseLost)
		require.NoError(t, s.MarkFailed(ctx, outbox.Failure{Row: ref, EventID: "evt_fail", Owner: "ingest", Attempts: 1, Err: "SQS: throttled", NextRetryAt: next, Now: t0}))
		r := row(t, s, ref.Key, ref.Topic)
		require.Equal(t, outbox.StatusFailed, r.Status)
		require.Equal(t, 1, r.Attempts)
		require.Equal(t, "SQS: throttled", r.LastError)
		require.True(t, r.NextRetryAt.Equal(next))
		require.False(t, r.Leased(t0), "the lease is released")
		ok, err := s.Claim(ctx, outbox.ClaimParams{Row: ref, Owner: "sweeper", Now: next, Lease: time.Minute})
		require.NoError(t, err)
		require.True(t, ok, "a failed row is sendable again")
	})
	t.Run("ABatchCommitsEveryNewEventAndNamesTheOnesThatExist", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		old := event("evt_bold", time.Minute, "a.events", "b.events")
		require.NoError(t, s.Commit(ctx, old))
		legacy := event("evt_blegacy", time.Minute, "a.events")
		legacy.Record.Key = ledger.LegacyKey("evt_blegacy")
		for i := range legacy.Rows {
			legacy.Rows[i].Key = legacy.Record.Key
		}
		require.NoError(t, s.Commit(ctx, legacy))

		again := event("evt_bold", time.Minute, "a.events", "b.events")
		viaLegacy := event("evt_blegacy", time.Minute, "a.events")
		viaLegacy.LegacyKey = ledger.LegacyKey("evt_blegacy")
		batch := []ingest.CommitParams{event("evt_bnew1", time.Minute, "a.events"), again, event("evt_bnew2", time.Minute, "a.events", "b.events"), viaLegacy}
		errs, err := s.CommitBatch(ctx, batch)
		require.NoError(t, err)
		require.Len(t, errs, 4)
		require.NoError(t, errs[0])
		var ex *ledger.ExistsError
		require.ErrorAs(t, errs[1], &ex)
		require.Equal(t, old.Record.Key, ex.Key)
		require.NoError(t, errs[2])
		require.ErrorAs(t, errs[3], &ex)
		require.Equal(t, ledger.LegacyKey("evt_blegacy"), ex.Key, "stored under its legacy key")

		for _, p := range []ingest.CommitParams{batch[0], batch[2]} {
			rec, rows, err := s.Load(ctx, p.Record.Key)
			require.NoError(t, err)
			require.Equal(t, p.Record.PayloadHash, rec.PayloadHash)
			require.Len(t, rows, len(p.Rows))
			for _, r := range rows {
				require.Equal(t, outbox.StatusPending, r.Status)
				require.Equal(t, "ingest", r.LeaseOwner)
			}
		}
		_, _, err = s.Load(ctx, viaLegacy.Record.Key)
		require.ErrorIs(t, err, ledger.ErrNotFound, "nothing written under the new key")
	})

	t.Run("ConcurrentBatchesCommitEachEventOnce", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		// Four publishers commit overlapping batches (events 0-9, 5-14,
		// 10-19, 15-24): each event has exactly one winner.
		wins := make([]atomic.Int32, 25)
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				var ps []ingest.CommitParams
				for i := w * 5; i < w*5+10; i++ {
					p := event(fmt.Sprintf("evt_bc_%02d", i), time.Minute, "a.events")
					for j := range p.Rows {
						p.Rows[j].LeaseOwner = fmt.Sprintf("ingest-%d", w)
					}
					ps = append(ps, p)
				}
				errs, err := s.CommitBatch(ctx, ps)
				if err != nil {
					t.Errorf("commit batch: %v", err)
					return
				}
				for k, e := range errs {
					switch {
					case e == nil:
						wins[w*5+k].Add(1)
					case !errors.Is(e, ledger.ErrExists):
						t.Errorf("event %d: %v", w*5+k, e)
					}
				}
			})
		}
		wg.Wait()
		for i := range wins {
			require.EqualValues(t, 1, wins[i].Load(), "event %d", i)
		}
	})

	t.Run("MarkEnqueuedBatchMarksWhatTheOwnerHoldsAndNothingElse", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		var rs []outbox.Enqueued
		// 30 rows (more than one request's worth), the owner's.
		for i := range 30 {
			p := event(fmt.Sprintf("evt_bm_%02d", i), time.Minute, "a.events")
			require.NoError(t, s.Commit(ctx, p))
			rs = append(rs, outbox.Enqueued{Row: outbox.RowRef{Key: p.Record.Key, Topic: "a.events"}, Owner: "ingest", Now: t0.Add(time.Second)})
		}
		// Row 1 marked by another owner, twice in the call; a missing row.
		rs[1].Owner = "someone-else"
		rs = append(rs,
			outbox.Enqueued{Row: rs[1].Row, Owner: "someone-else", Now: t0},
			outbox.Enqueued{Row: outbox.RowRef{Key: "acme/evt_bm_none", Topic: "a.events"}, Owner: "ingest", Now: t0},
		)
		errs := s.MarkEnqueuedBatch(ctx, rs)
		require.Len(t, errs, len(rs))
		for i := range 30 {
			r := row(t, s, rs[i].Row.Key, "a.events")
			if i == 1 {
				require.ErrorIs(t, errs[i], outbox.ErrLeaseLost)
				require.Equal(t, outbox.StatusPending, r.Status, "another owner's mark is refused")
				continue
			}
			require.NoError(t, errs[i], i)
			require.Equal(t, outbox.StatusEnqueued, r.Status)
			require.Empty(t, r.LeaseOwner)
		}
		require.ErrorIs(t, errs[30], outbox.ErrLeaseLost)
		require.ErrorIs(t, errs[31], outbox.ErrLeaseLost, "a missing row is not marked")
		_, _, err := s.Load(ctx, "acme/evt_bm_none")
		require.ErrorIs(t, err, ledger.ErrNotFound, "nor created")
		again := s.MarkEnqueuedBatch(ctx, rs[:1])
		require.ErrorIs(t, again[0], outbox.ErrLeaseLost, "marked once")
	})
}
