package jobs_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
)

// failing is a kind whose steps wait for release, then run decide: the
// step of a cancelled or taken-over claim fails while it runs.
type failing struct {
	entered chan jobs.Step
	release chan struct{}
	calls   atomic.Int32
	decide  func(call int32, s jobs.Step) (jobs.Outcome, error)
}

func (k *failing) kind(timeout time.Duration) jobs.Kind {
	return jobs.Kind{Name: "failing", StepTimeout: timeout, MaxAttempts: 2, Handler: jobs.HandlerFunc(func(ctx context.Context, s jobs.Step) (jobs.Outcome, error) {
		call := k.calls.Add(1)
		k.entered <- s
		<-k.release
		return k.decide(call, s)
	})}
}

func newFailing(decide func(call int32, s jobs.Step) (jobs.Outcome, error)) *failing {
	return &failing{entered: make(chan jobs.Step, 4), release: make(chan struct{}), decide: decide}
}

// requireNoIncident checks that no incident names the job, and that
// replaying (the replay engine's RestartJob) cannot take it back to work.
func requireNoIncident(t *testing.T, b *bundle, j jobs.Job, want jobs.Status) {
	t.Helper()
	ctx := context.Background()
	id := incident.ID(j.ID, jobs.IncidentTopic(j.Kind))
	_, err := b.env.Incidents().Get(ctx, id)
	require.ErrorIs(t, err, incident.ErrNotFound, "no incident for a failure whose claim no longer stood")
	got := b.job(t, j.ID)
	require.Equal(t, want, got.Status)
	require.Empty(t, got.IncidentID)
	err = b.engine.RestartJob(ctx, j.ID, "replayed from incident "+id)
	var re *jobs.RequestError
	require.ErrorAs(t, err, &re, "replay never revives a %s job", want)
	require.Equal(t, jobs.CodeTransitionNotAllowed, re.Code)
	again := b.job(t, j.ID)
	require.Equal(t, want, again.Status)
	require.Equal(t, got.Generation, again.Generation)
}

// Cancel a job mid-step and let the step fail: the job stays cancelled
// and no incident opens. Before, the incident opened before the fenced
// write, so an open incident existed whose replay revived the cancelled
// job (queued, generation 3) (issue 21 #6).
func TestCancelledJobsFailingStepOpensNoIncident(t *testing.T) {
	t.Parallel()
	b := setup(t, opts{noQueue: true})
	k := newFailing(func(int32, jobs.Step) (jobs.Outcome, error) {
		return jobs.Outcome{}, jobs.Fail("upstream_refused", errors.New("the upstream refused the step"))
	})
	b.engine, _ = rebuild(t, b, k.kind(10*time.Second))
	ctx := context.Background()
	j := b.start(t, "failing", "k", map[string]any{})
	done := make(chan error, 1)
	go func() {
		done <- b.engine.RunWake(ctx, jobs.Wake{TenantID: "acme", IdempotencyKey: "k", Payload: jobs.WakePayload{Kind: "failing", JobID: j.ID, Generation: 1}})
	}()
	<-k.entered
	_, err := b.engine.Cancel(ctx, j.ID)
	require.NoError(t, err)
	close(k.release)
	require.NoError(t, <-done)
	requireNoIncident(t, b, j, jobs.StatusCancelled)
}

// A lease taken over after expiry: the new worker completes the step, the
// old one's step fails late. No incident opens for the stale failure, and
// replaying cannot restart the completed job.
func TestTakenOverLeasesFailureOpensNoIncident(t *testing.T) {
	t.Parallel()
	b := setup(t, opts{noQueue: true})
	k := newFailing(func(call int32, _ jobs.Step) (jobs.Outcome, error) {
		if call == 1 {
			return jobs.Outcome{}, jobs.Fail("stale", errors.New("the old worker's step failed"))
		}
		return jobs.Done(map[string]bool{"ok": true}), nil
	})
	b.engine, _ = rebuild(t, b, k.kind(time.Second))
	ctx := context.Background()
	j := b.start(t, "failing", "k", map[string]any{})
	wake := jobs.Wake{TenantID: "acme", IdempotencyKey: "k", Payload: jobs.WakePayload{Kind: "failing", JobID: j.ID, Generation: 1}}
	oldDone := make(chan error, 1)
	go func() { oldDone <- b.engine.RunWake(context.WithoutCancel(ctx), wake) }()
	<-k.entered
	time.Sleep(2500 * time.Millisecond) // past the lease (1 s step + 1 s margin)
	newDone := make(chan error, 1)
	go func() { newDone <- b.engine.RunWake(ctx, wake) }()
	<-k.entered
	close(k.release)
	require.NoError(t, <-oldDone)
	require.NoError(t, <-newDone)
	requireNoIncident(t, b, j, jobs.StatusCompleted)
}

// A job that fails for good while the incident store refuses writes is
// still never without its incident: it stays due, and the sweep opens the
// incident once the store takes writes again.
func TestAFailedJobsIncidentIsOpenedLaterIfItCannotBeAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, opts{noQueue: true})
	k := newFailing(func(int32, jobs.Step) (jobs.Outcome, error) {
		return jobs.Outcome{}, jobs.Fail("broken", errors.New("broken for good"))
	})
	close(k.release)
	b.engine, _ = rebuild(t, b, k.kind(5*time.Second))
	ctx := context.Background()
	j := b.start(t, "failing", "k", map[string]any{})
	b.env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Resource: b.env.Resources.IncidentsTable})
	wake := jobs.Wake{TenantID: "acme", IdempotencyKey: "k", Payload: jobs.WakePayload{Kind: "failing", JobID: j.ID, Generation: 1}}
	require.Error(t, b.engine.RunWake(ctx, wake), "the wake is retried: the incident is not open yet")
	<-k.entered
	b.env.Faults.Clear()
	got := b.job(t, j.ID)
	require.Equal(t, jobs.StatusFailed, got.Status)
	require.NotEmpty(t, got.IncidentID)
	_, err := b.env.Incidents().Get(ctx, got.IncidentID)
	require.ErrorIs(t, err, incident.ErrNotFound)

	time.Sleep(1100 * time.Millisecond) // due after the lease margin
	_, err = b.engine.Sweep(ctx, time.Now().Add(5*time.Second))
	require.NoError(t, err)
	inc, err := b.env.Incidents().Get(ctx, got.IncidentID)
	require.NoError(t, err)
	require.Equal(t, incident.StatusOpen, inc.Status)
	require.Equal(t, "broken", inc.ErrorCode)
	rep, err := b.engine.Sweep(ctx, time.Now().Add(5*time.Second))
	require.NoError(t, err)
	require.Zero(t, rep.Due, "confirmed: the failed job left the due index")
	require.Equal(t, int32(1), k.calls.Load(), "the step ran once")

	// Its replay restarts it (a failed job is what replay is for).
	require.NoError(t, b.engine.RestartJob(ctx, j.ID, "replayed"))
	require.Equal(t, jobs.StatusQueued, b.job(t, j.ID).Status)
}
