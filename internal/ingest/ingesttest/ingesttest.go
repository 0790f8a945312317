// Package ingesttest is the contract suite of the event store ingest
// writes through: the ledger (ingest.Ledger: one transactional commit per
// event, exactly one winner) and the senders' side of the outbox rows
// (outbox.Store: lease-conditional claims and outcome writes). Every
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
	"github.com/siteswarm/eventplatform/internal/kit/testkit"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// Store is the event store as ingest and senders use it.
type Store interface {
	ingest.Ledger
	outbox.Store
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
}
