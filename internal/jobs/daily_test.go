package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/jobs"
)

// daily is a one-step kind run per tenant by a daily schedule; its tenants
// come from tenants (an error fails the listing).
func daily(tenants func() ([]string, error), keep time.Duration) jobs.Kind {
	return jobs.Kind{Name: "daily-thing", KeepFor: keep,
		DailyTenants: func(context.Context) ([]string, error) { return tenants() },
		CheckArgs: func(raw json.RawMessage) error {
			var a struct {
				Date string `json:"date"`
			}
			return json.Unmarshal(raw, &a)
		},
		Handler: jobs.HandlerFunc(func(ctx context.Context, s jobs.Step) (jobs.Outcome, error) {
			return jobs.Done(map[string]string{"tenant": s.Job.TenantID}), nil
		})}
}

// A daily call without a tenant starts one job per listed tenant, keyed by
// the UTC date: a repeat of the call (EventBridge's retry) starts nothing
// more; a tenant whose start is refused does not stop the others.
func TestDailyScheduleStartsOneJobPerTenantPerDay(t *testing.T) {
	t.Parallel()
	tenants := []string{"acme", "globex", "Not A Tenant"}
	b := setup(t, opts{noQueue: true, kinds: []jobs.Kind{daily(func() ([]string, error) { return tenants, nil }, 0)}})
	ctx := context.Background()
	call := json.RawMessage(`{"action":"daily","kind":"daily-thing"}`)

	out, err := b.engine.HandleSchedule(ctx, call)
	require.Error(t, err, "one tenant could not be started")
	first := out.(jobs.DailyStarted)
	require.Len(t, first.Jobs, 2)
	require.Contains(t, first.Failed, "Not A Tenant")
	for _, j := range first.Jobs {
		require.True(t, j.Created)
	}

	tenants = tenants[:2]
	out, err = b.engine.HandleSchedule(ctx, call)
	require.NoError(t, err)
	again := out.(jobs.DailyStarted)
	require.Len(t, again.Jobs, 2)
	for i, j := range again.Jobs {
		require.False(t, j.Created, "the same day's job")
		require.Equal(t, first.Jobs[i].JobID, j.JobID)
		got := b.job(t, j.JobID)
		require.Equal(t, time.Now().UTC().Format(time.DateOnly), got.IdempotencyKey)
		require.JSONEq(t, `{"date":"`+got.IdempotencyKey+`"}`, string(got.Args))
	}

	_, err = b.engine.HandleSchedule(ctx, json.RawMessage(`{"action":"daily","kind":"counter"}`))
	require.True(t, jobs.IsRequestError(err), "a kind without DailyTenants has no per-tenant schedule: %v", err)
}

// A failing tenant listing fails the call (the schedule retries it).
func TestDailyScheduleFailsWhenItsTenantsCannotBeListed(t *testing.T) {
	t.Parallel()
	b := setup(t, opts{noQueue: true, kinds: []jobs.Kind{daily(func() ([]string, error) { return nil, errors.New("table unavailable") }, 0)}})
	_, err := b.engine.StartDaily(context.Background(), "daily-thing")
	require.ErrorContains(t, err, "table unavailable")
}

// A kind's KeepFor, not the engine's retention, sets how long its finished
// jobs are kept.
func TestKindKeepsItsFinishedJobsForItsOwnRetention(t *testing.T) {
	t.Parallel()
	keep := 400 * 24 * time.Hour
	b := setup(t, opts{noQueue: true, kinds: []jobs.Kind{daily(func() ([]string, error) { return nil, nil }, keep)}})
	own := b.start(t, "daily-thing", "k1", map[string]string{"date": "2026-12-04"})
	other := b.start(t, "counter", "k2", map[string]int{"steps": 1})
	_, err := b.engine.Sweep(context.Background(), time.Now().Add(10*time.Second))
	require.NoError(t, err)
	for _, c := range []struct {
		id   string
		keep time.Duration
	}{{own.ID, keep}, {other.ID, jobs.DefaultRetention}} {
		j := b.job(t, c.id)
		require.Equal(t, jobs.StatusCompleted, j.Status)
		require.Equal(t, c.keep, j.ExpiresAt.Sub(j.FinishedAt))
	}
}
