// Package jobstest is the contract suite of the job ledger (jobs.Store): a
// job and its idempotency key are created together and once per (tenant,
// kind, key); reads see the last write; every write is conditional on the
// version read, so of concurrent writers exactly one wins; a job is due
// (in exactly one partition, oldest first, across pages) while it is
// unfinished and its time has come, and never after it finished; listings
// page newest first by tenant or by kind, filtered, and never show another
// tenant's jobs. Every implementation runs Exercise; the DynamoDB adapter
// runs it against both emulators.
package jobstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/jobs"
)

// Exercise runs the contract against fresh stores from newStore.
func Exercise(t *testing.T, newStore func(t *testing.T) jobs.Store) {
	t.Helper()
	ctx := context.Background()

	t.Run("AJobAndItsKeyAreCreatedTogetherOncePerKey", func(t *testing.T) {
		t.Parallel()
		s, t0 := newStore(t), recent()
		j := job("job_create_1", "acme", "tenant-export", "k1", t0)
		j.Args, j.ArgsHash = json.RawMessage(`{"format":"ndjson","since":"2026-01-01"}`), "h1"
		require.NoError(t, s.Create(ctx, j))
		got, ok, err := s.Get(ctx, j.ID)
		require.NoError(t, err)
		require.True(t, ok)
		same(t, j, got)
		got, ok, err = s.ByKey(ctx, "acme", "tenant-export", "k1")
		require.NoError(t, err)
		require.True(t, ok, "the key finds its job")
		same(t, j, got)

		// The key is taken: a second job with it is refused and not written.
		dup := job("job_create_2", "acme", "tenant-export", "k1", t0)
		require.ErrorIs(t, s.Create(ctx, dup), jobs.ErrExists)
		_, ok, err = s.Get(ctx, dup.ID)
		require.NoError(t, err)
		require.False(t, ok, "a refused create writes no job")
		got, _, err = s.ByKey(ctx, "acme", "tenant-export", "k1")
		require.NoError(t, err)
		require.Equal(t, j.ID, got.ID, "the key still names the first job")

		// The same key of another tenant or another kind is another key.
		for _, other := range []jobs.Job{
			job("job_create_3", "globex", "tenant-export", "k1", t0),
			job("job_create_4", "acme", "erasure", "k1", t0),
		} {
			require.NoError(t, s.Create(ctx, other))
			got, ok, err := s.ByKey(ctx, other.TenantID, other.Kind, "k1")
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, other.ID, got.ID)
		}
	})

	t.Run("UnknownJobsAndKeysAreNotFound", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		_, ok, err := s.Get(ctx, "job_nobody")
		require.NoError(t, err)
		require.False(t, ok)
		_, ok, err = s.ByKey(ctx, "acme", "tenant-export", "nobody")
		require.NoError(t, err)
		require.False(t, ok)
	})

	t.Run("ConcurrentCreatesWithOneKeyMakeOneJob", func(t *testing.T) {
		t.Parallel()
		s, t0 := newStore(t), recent()
		const n = 8
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				errs[i] = s.Create(ctx, job(fmt.Sprintf("job_race_%d", i), "acme", "tenant-export", "race", t0))
			})
		}
		wg.Wait()
		var won []string
		for i, err := range errs {
			if err == nil {
				won = append(won, fmt.Sprintf("job_race_%d", i))
				continue
			}
			require.ErrorIs(t, err, jobs.ErrExists)
		}
		require.Len(t, won, 1, "exactly one create wins")
		got, ok, err := s.ByKey(ctx, "acme", "tenant-export", "race")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, won[0], got.ID)
		for i := range n {
			_, ok, err := s.Get(ctx, fmt.Sprintf("job_race_%d", i))
			require.NoError(t, err)
			require.Equal(t, won[0] == fmt.Sprintf("job_race_%d", i), ok, "only the winner's job exists")
		}
	})

	t.Run("EveryWriteIsConditionalOnTheVersionRead", func(t *testing.T) {
		t.Parallel()
		s, t0 := newStore(t), recent()
		j := job("job_update_1", "acme", "tenant-export", "k1", t0)
		require.NoError(t, s.Create(ctx, j))

		j.Version, j.Status, j.Steps, j.LeaseOwner, j.LeaseUntil = 2, jobs.StatusRunning, 1, "worker-a", t0.Add(time.Minute)
		j.Checkpoint, j.Progress = json.RawMessage(`{"offset":4096}`), &jobs.Progress{Done: 4096, Total: 10000, Unit: "bytes", Counts: map[string]int64{"accepted": 12}}
		j.UpdatedAt = t0.Add(time.Second)
		require.NoError(t, s.Update(ctx, j))
		got, _, err := s.Get(ctx, j.ID)
		require.NoError(t, err)
		same(t, j, got)
		got, _, err = s.ByKey(ctx, "acme", "tenant-export", "k1")
		require.NoError(t, err)
		same(t, j, got)

		stale := j
		stale.Steps = 99
		require.ErrorIs(t, s.Update(ctx, stale), jobs.ErrConflict, "a write at the stored version is stale")
		ahead := j
		ahead.Version, ahead.Steps = 4, 99
		require.ErrorIs(t, s.Update(ctx, ahead), jobs.ErrConflict, "a write skipping a version is refused")
		got, _, err = s.Get(ctx, j.ID)
		require.NoError(t, err)
		same(t, j, got)

		missing := job("job_update_missing", "acme", "tenant-export", "k2", t0)
		missing.Version = 2
		require.ErrorIs(t, s.Update(ctx, missing), jobs.ErrConflict, "an update creates no job")
		_, ok, err := s.Get(ctx, missing.ID)
		require.NoError(t, err)
		require.False(t, ok)
	})

	t.Run("OfConcurrentWritersExactlyOneWins", func(t *testing.T) {
		t.Parallel()
		s, t0 := newStore(t), recent()
		j := job("job_fence_1", "acme", "tenant-export", "k1", t0)
		require.NoError(t, s.Create(ctx, j))
		const n = 8
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			w := j
			w.Version, w.Status, w.LeaseOwner = 2, jobs.StatusRunning, fmt.Sprintf("worker-%d", i)
			wg.Go(func() { errs[i] = s.Update(ctx, w) })
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			if err == nil {
				require.Equal(t, -1, winner, "two writers won")
				winner = i
				continue
			}
			require.ErrorIs(t, err, jobs.ErrConflict)
		}
		require.GreaterOrEqual(t, winner, 0, "one writer wins")
		got, _, err := s.Get(ctx, j.ID)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("worker-%d", winner), got.LeaseOwner)
		require.Equal(t, 2, got.Version)
	})

	t.Run("AFinishedJobKeepsItsKeyAndARevivedOneToo", func(t *testing.T) {
		t.Parallel()
		s, t0 := newStore(t), recent()
		j := job("job_finish_1", "acme", "tenant-export", "k1", t0)
		require.NoError(t, s.Create(ctx, j))
		j.Version, j.Status, j.DueAt = 2, jobs.StatusCompleted, time.Time{}
		j.FinishedAt, j.ExpiresAt, j.Result = t0.Add(time.Second), t0.Add(30*24*time.Hour), json.RawMessage(`{"objects":2}`)
		require.NoError(t, s.Update(ctx, j))
		got, ok, err := s.ByKey(ctx, "acme", "tenant-export", "k1")
		require.NoError(t, err)
		require.True(t, ok, "a finished job's key finds it until both expire")
		same(t, j, got)
		require.ErrorIs(t, s.Create(ctx, job("job_finish_2", "acme", "tenant-export", "k1", t0)), jobs.ErrExists)

		j.Version, j.Status, j.Generation, j.DueAt, j.FinishedAt, j.ExpiresAt, j.Result, j.Revived =
			3, jobs.StatusQueued, 2, t0, time.Time{}, time.Time{}, nil, true
		require.NoError(t, s.Update(ctx, j))
		got, ok, err = s.ByKey(ctx, "acme", "tenant-export", "k1")
		require.NoError(t, err)
		require.True(t, ok)
		same(t, j, got)
	})

	t.Run("AJobIsDueWhileUnfinishedAndItsTimeHasCome", func(t *testing.T) {
		t.Parallel()
		s, t0 := newStore(t), recent()
		require.Positive(t, s.Shards())
		past := job("job_due_past", "acme", "tenant-export", "k1", t0)
		past.DueAt = t0.Add(-time.Minute)
		now := job("job_due_now", "acme", "tenant-export", "k2", t0)
		now.DueAt = t0
		later := job("job_due_later", "acme", "tenant-export", "k3", t0)
		later.DueAt = t0.Add(time.Hour)
		running := job("job_due_lease", "acme", "tenant-export", "k4", t0)
		running.Status, running.LeaseOwner, running.LeaseUntil, running.DueAt = jobs.StatusRunning, "w", t0.Add(-time.Second), t0.Add(-time.Second)
		done := job("job_due_done", "acme", "tenant-export", "k5", t0)
		for _, j := range []jobs.Job{past, now, later, running, done} {
			require.NoError(t, s.Create(ctx, j))
		}
		done.Version, done.Status, done.FinishedAt, done.ExpiresAt = 2, jobs.StatusCompleted, t0, t0.Add(30*24*time.Hour)
		require.NoError(t, s.Update(ctx, done), "a finished job keeps no due time")
		require.ElementsMatch(t, []string{past.ID, now.ID, running.ID}, due(t, s, t0, 10),
			"due: unfinished and due at or before now (an expired lease included); not later, not finished")
		require.ElementsMatch(t, []string{past.ID, now.ID, running.ID, later.ID}, due(t, s, t0.Add(2*time.Hour), 10))

		// Finishing a due job takes it out at once.
		past.Version, past.Status, past.DueAt, past.FinishedAt, past.ExpiresAt = 2, jobs.StatusFailed, time.Time{}, t0, t0.Add(30*24*time.Hour)
		require.NoError(t, s.Update(ctx, past))
		require.ElementsMatch(t, []string{now.ID, running.ID}, due(t, s, t0, 10))
		// Rescheduling moves it.
		now.Version, now.Status, now.DueAt = 2, jobs.StatusWaiting, t0.Add(10*time.Minute)
		require.NoError(t, s.Update(ctx, now))
		require.ElementsMatch(t, []string{running.ID}, due(t, s, t0, 10))
	})

	t.Run("DuePartitionsPageOldestFirstAndHoldEachJobOnce", func(t *testing.T) {
		t.Parallel()
		s, t0 := newStore(t), recent()
		const n = 24
		var want []string
		for i := range n {
			j := job(fmt.Sprintf("job_page_%02d", i), "acme", "tenant-export", fmt.Sprintf("k%d", i), t0)
			j.DueAt = t0.Add(-time.Duration(n-i) * time.Second) // job_page_00 is the oldest
			require.NoError(t, s.Create(ctx, j))
			want = append(want, j.ID)
		}
		var all []string
		for shard := range s.Shards() {
			var ids []string
			cursor := ""
			for range n + 1 {
				page, err := s.Due(ctx, jobs.DueParams{Shard: shard, Now: t0, Limit: 3, Cursor: cursor})
				require.NoError(t, err)
				require.LessOrEqual(t, len(page.JobIDs), 3)
				ids = append(ids, page.JobIDs...)
				if cursor = page.Cursor; cursor == "" {
					break
				}
			}
			require.Empty(t, cursor, "shard %d pages end", shard)
			require.True(t, slices.IsSorted(ids), "shard %d is oldest first: %v", shard, ids)
			all = append(all, ids...)
		}
		require.ElementsMatch(t, want, all, "every due job in exactly one partition, once")
	})

	t.Run("ListingsPageNewestFirstAndStayInTheirTenant", func(t *testing.T) {
		t.Parallel()
		s, t0 := newStore(t), recent()
		// Five acme exports and three acme erasures, alternating in time,
		// two of the exports failed; globex has an export too.
		var exports, erasures, failed []string
		for i := range 8 {
			kind := "tenant-export"
			if i%3 == 2 {
				kind = "erasure"
			}
			j := job(fmt.Sprintf("job_list_%d", i), "acme", kind, fmt.Sprintf("k%d", i), t0.Add(time.Duration(i)*time.Second))
			require.NoError(t, s.Create(ctx, j))
			if kind == "erasure" {
				erasures = append([]string{j.ID}, erasures...)
				continue
			}
			exports = append([]string{j.ID}, exports...)
			if i%2 == 1 {
				j.Version, j.Status, j.DueAt, j.FinishedAt, j.ExpiresAt = 2, jobs.StatusFailed, time.Time{}, t0, t0.Add(30*24*time.Hour)
				j.Error = &jobs.Error{Code: "export_failed", Message: "boom"}
				require.NoError(t, s.Update(ctx, j))
				failed = append([]string{j.ID}, failed...)
			}
		}
		other := job("job_list_globex", "globex", "tenant-export", "k0", t0.Add(time.Hour))
		require.NoError(t, s.Create(ctx, other))

		all := append(slices.Clone(exports), erasures...)
		slices.SortFunc(all, func(a, b string) int { return -compareID(a, b) })
		require.Equal(t, all, list(t, s, jobs.ListParams{TenantID: "acme", Limit: 3}), "by tenant, newest first, across pages")
		require.Equal(t, exports, list(t, s, jobs.ListParams{TenantID: "acme", Kind: "tenant-export", Limit: 2}), "by tenant and kind")
		require.Equal(t, failed, list(t, s, jobs.ListParams{TenantID: "acme", Status: jobs.StatusFailed, Limit: 2}), "by tenant and status")
		require.Equal(t, append([]string{other.ID}, exports...), list(t, s, jobs.ListParams{Kind: "tenant-export", Limit: 4}),
			"by kind (the operator's view across tenants)")
		require.Equal(t, []string{other.ID}, list(t, s, jobs.ListParams{TenantID: "globex", Limit: 10}))
		require.Empty(t, list(t, s, jobs.ListParams{TenantID: "initech", Limit: 10}))

		page, err := s.List(ctx, jobs.ListParams{TenantID: "acme", Limit: 3})
		require.NoError(t, err)
		require.Len(t, page.Jobs, 3)
		same(t, mustGet(t, s, page.Jobs[0].ID), page.Jobs[0])
		_, err = s.List(ctx, jobs.ListParams{TenantID: "acme", Limit: 3, Cursor: "not-a-cursor"})
		require.True(t, jobs.IsRequestError(err), "a cursor the store did not hand out is the caller's error: %v", err)
	})
}

// recent is a reference instant near the wall clock: finished jobs expire
// (TTL) and DynamoDB Local's TTL sweeper deletes expired items, so
// fixtures stay clear of the past (testkit.Recent's reasoning).
func recent() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

func job(id, tenant, kind, key string, at time.Time) jobs.Job {
	return jobs.Job{ID: id, Kind: kind, TenantID: tenant, IdempotencyKey: key, Args: json.RawMessage(`{}`),
		Status: jobs.StatusQueued, Generation: 1, DueAt: at, CreatedAt: at, UpdatedAt: at, Version: 1}
}

// same compares jobs as stored: Revived is never stored.
func same(t *testing.T, want, got jobs.Job) {
	t.Helper()
	want.Revived, got.Revived = false, false
	w, err := json.Marshal(want)
	require.NoError(t, err)
	g, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, string(w), string(g))
}

func mustGet(t *testing.T, s jobs.Store, id string) jobs.Job {
	t.Helper()
	j, ok, err := s.Get(context.Background(), id)
	require.NoError(t, err)
	require.True(t, ok, id)
	return j
}

// due lists every partition's due job ids at now.
func due(t *testing.T, s jobs.Store, now time.Time, limit int) []string {
	t.Helper()
	var ids []string
	for shard := range s.Shards() {
		cursor := ""
		for {
			page, err := s.Due(context.Background(), jobs.DueParams{Shard: shard, Now: now, Limit: limit, Cursor: cursor})
			require.NoError(t, err)
			ids = append(ids, page.JobIDs...)
			if cursor = page.Cursor; cursor == "" {
				break
			}
		}
	}
	return ids
}

// list pages a listing to its end: no page over the limit, no job twice.
func list(t *testing.T, s jobs.Store, p jobs.ListParams) []string {
	t.Helper()
	var ids []string
	for range 100 {
		page, err := s.List(context.Background(), p)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.Jobs), p.Limit)
		for _, j := range page.Jobs {
			require.False(t, slices.Contains(ids, j.ID), "%s listed twice", j.ID)
			require.True(t, (p.TenantID == "" || j.TenantID == p.TenantID) && (p.Kind == "" || j.Kind == p.Kind) && (p.Status == "" || j.Status == p.Status),
				"%s does not match %+v", j.ID, p)
			ids = append(ids, j.ID)
		}
		if p.Cursor = page.Cursor; p.Cursor == "" {
			return ids
		}
	}
	t.Fatal("the listing never ended")
	return nil
}

// compareID orders the listing fixtures by creation (job_list_<i>).
func compareID(a, b string) int {
	var x, y int
	if _, err := fmt.Sscanf(a, "job_list_%d", &x); err != nil {
		panic(errors.New("jobstest: " + a))
	}
	if _, err := fmt.Sscanf(b, "job_list_%d", &y); err != nil {
		panic(errors.New("jobstest: " + b))
	}
	return x - y
}
