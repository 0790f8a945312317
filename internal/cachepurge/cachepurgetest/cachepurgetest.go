// Package cachepurgetest is the contract suite of the cache purge service's
// store (purge.Jobs, purge.Telemetry, purge.Reports): a job and its
// coalesce lock are created together and only once per lock, a lock that
// moved on is neither taken nor released, Ensure never overwrites, counters
// add up under concurrency, and dead letters list newest first. Every
// implementation runs Exercise; the DynamoDB adapter runs it against the
// emulators.
package cachepurgetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/cachepurge"
)

// Store is the purge table as the service uses it.
type Store interface {
	cachepurge.Jobs
	cachepurge.Telemetry
	cachepurge.Reports
}

// t0 is near the wall clock, not testkit.T0: a job item expires (TTL)
// a day after it was enqueued, and DynamoDB Local's TTL sweeper deletes
// expired items, so a job enqueued at a fixed past date could vanish
// between its Create and the read that checks it.
var t0 = time.Now().UTC().Truncate(time.Millisecond)

func job(id, tenant string) cachepurge.Job {
	return cachepurge.Job{JobID: id, TenantID: tenant, Tags: []string{"tenant:" + tenant}, Status: cachepurge.StatusQueued, EnqueuedAt: t0}
}

// Exercise runs the contract against fresh stores from newStore.
func Exercise(t *testing.T, newStore func(t *testing.T) Store) {
	t.Helper()
	ctx := context.Background()

	t.Run("AJobAndItsLockAreCreatedTogetherOncePerLock", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		_, found, err := s.Lock(ctx, "acme", "h1")
		require.NoError(t, err)
		require.False(t, found)
		j1 := job(cachepurge.NewJobID(), "acme")
		lock := cachepurge.Lock{TenantID: "acme", Hash: "h1", JobID: j1.JobID, Until: t0.Add(5 * time.Second)}
		require.NoError(t, s.Create(ctx, cachepurge.CreateParams{Job: j1, Lock: lock}))
		got, found, err := s.Lock(ctx, "acme", "h1")
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, j1.JobID, got.JobID)
		require.True(t, got.Until.Equal(lock.Until))
		stored, ok, err := s.Job(ctx, j1.JobID)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, j1.Tags, stored.Tags)
		require.Equal(t, cachepurge.StatusQueued, stored.Status)

		// Creating against "no lock" again loses; so does a stale seen id;
		// and a losing create writes no job.
		j2 := job(cachepurge.NewJobID(), "acme")
		require.ErrorIs(t, s.Create(ctx, cachepurge.CreateParams{Job: j2, Lock: cachepurge.Lock{TenantID: "acme", Hash: "h1", JobID: j2.JobID, Until: t0}}), cachepurge.ErrLockTaken)
		require.ErrorIs(t, s.Create(ctx, cachepurge.CreateParams{Job: j2, Lock: cachepurge.Lock{TenantID: "acme", Hash: "h1", JobID: j2.JobID, Until: t0}, Seen: "pj_stale"}), cachepurge.ErrLockTaken)
		_, ok, err = s.Job(ctx, j2.JobID)
		require.NoError(t, err)
		require.False(t, ok)
		// Replacing the seen lock wins.
		require.NoError(t, s.Create(ctx, cachepurge.CreateParams{Job: j2, Lock: cachepurge.Lock{TenantID: "acme", Hash: "h1", JobID: j2.JobID, Until: t0.Add(time.Minute)}, Seen: j1.JobID}))
		got, _, err = s.Lock(ctx, "acme", "h1")
		require.NoError(t, err)
		require.Equal(t, j2.JobID, got.JobID)
		// Another tenant's same hash is another lock.
		_, found, err = s.Lock(ctx, "globex", "h1")
		require.NoError(t, err)
		require.False(t, found)
	})

	t.Run("ConcurrentCreatesOfOneLockHaveOneWinner", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		var wins atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				j := job(cachepurge.NewJobID(), "acme")
				err := s.Create(ctx, cachepurge.CreateParams{Job: j, Lock: cachepurge.Lock{TenantID: "acme", Hash: "h", JobID: j.JobID, Until: t0}})
				switch {
				case err == nil:
					wins.Add(1)
				case !errors.Is(err, cachepurge.ErrLockTaken):
					t.Errorf("create: %v", err)
				}
			})
		}
		wg.Wait()
		require.EqualValues(t, 1, wins.Load())
	})

	t.Run("ReleaseEndsOnlyTheSameJobsLock", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		j := job(cachepurge.NewJobID(), "acme")
		l := cachepurge.Lock{TenantID: "acme", Hash: "h", JobID: j.JobID, Until: t0}
		require.NoError(t, s.Create(ctx, cachepurge.CreateParams{Job: j, Lock: l}))
		other := l
		other.JobID = "pj_00000000000000000000000000000000"
		require.NoError(t, s.ReleaseLock(ctx, other), "a lock that moved on is left alone")
		_, found, _ := s.Lock(ctx, "acme", "h")
		require.True(t, found)
		require.NoError(t, s.ReleaseLock(ctx, l))
		got, found, err := s.Lock(ctx, "acme", "h")
		require.NoError(t, err)
		if found {
			require.False(t, time.Now().Before(got.Until), "a released lock is over")
		}
	})

	t.Run("EnsureNeverOverwritesAndSaveDoes", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		j := job(cachepurge.JobIDForEvent("acme", "evt_1"), "acme")
		stored, created, err := s.Ensure(ctx, j)
		require.NoError(t, err)
		require.True(t, created)
		require.Equal(t, j.JobID, stored.JobID)
		now := t0.Add(time.Minute)
		stored.Status, stored.CompletedAt, stored.Purged = cachepurge.StatusCompleted, &now, ptr(1)
		require.NoError(t, s.Save(ctx, stored))
		again, created, err := s.Ensure(ctx, j)
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, cachepurge.StatusCompleted, again.Status, "the stored job, not the new one")
		require.Equal(t, 1, *again.Purged)
		_, ok, err := s.Job(ctx, "pj_ffffffffffffffffffffffffffffffff")
		require.NoError(t, err)
		require.False(t, ok)
	})

	t.Run("CountersAddUpUnderConcurrency", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		var wg sync.WaitGroup
		for i := range 10 {
			wg.Go(func() {
				tenant := []string{"acme", "globex"}[i%2]
				if err := s.Count(ctx, cachepurge.Counts{Day: "2026-12-02", TenantID: tenant, Purges: 1, Tags: 3, Retries429: i % 3 / 2, Failures: i % 5 / 4}); err != nil {
					t.Errorf("count: %v", err)
				}
			})
		}
		wg.Wait()
		daily, err := s.Daily(ctx, "2026-12-02")
		require.NoError(t, err)
		require.ElementsMatch(t, []cachepurge.Daily{
			{Day: "2026-12-02", TenantID: "acme", Purges: 5, Tags: 15, Retries429: 2, Failures: 1},
			{Day: "2026-12-02", TenantID: "globex", Purges: 5, Tags: 15, Retries429: 1, Failures: 1},
		}, daily)
		empty, err := s.Daily(ctx, "2026-12-01")
		require.NoError(t, err)
		require.Empty(t, empty)
	})

	t.Run("DeadLettersListNewestFirst", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		now := time.Now().UTC()
		for i := range 5 {
			require.NoError(t, s.DeadLetter(ctx, cachepurge.DeadLetter{
				JobID: fmt.Sprintf("pj_%032d", i), TenantID: "acme", Tags: []string{"tenant:acme"}, EnqueuedAt: now.Add(-time.Hour),
				FailedAt: now.Add(time.Duration(i) * time.Second), Attempts: 3, Error: &cachepurge.Error{Code: cachepurge.CodeMaxRetriesExceeded, Message: "x"},
			}))
		}
		got, err := s.RecentDeadLetters(ctx, 3)
		require.NoError(t, err)
		require.Len(t, got, 3)
		require.Equal(t, fmt.Sprintf("pj_%032d", 4), got[0].JobID)
		require.Equal(t, fmt.Sprintf("pj_%032d", 2), got[2].JobID)
		require.Equal(t, cachepurge.CodeMaxRetriesExceeded, got[0].Error.Code)
	})
}

func ptr[T any](v T) *T { return &v }
