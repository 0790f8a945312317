package jobs_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/jobs"
)

// A step that ends its worker every time (out of memory, past the Lambda
// timeout) is claimed MaxAttempts times, then the job fails with an
// incident. Before, the claim counted no attempt: the step was reclaimed
// forever (attempts 0, running) and no incident opened (issue 21 #7).
// runtime.Goexit stands for the process dying: nothing after the step
// runs, not even the commit of a failure.
func TestAStepThatKillsItsWorkerUsesUpItsAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t, opts{noQueue: true})
	var claims atomic.Int32
	var attempts []int
	crash := jobs.Kind{Name: "crash", MaxAttempts: 3, StepTimeout: time.Second, Handler: jobs.HandlerFunc(func(ctx context.Context, s jobs.Step) (jobs.Outcome, error) {
		claims.Add(1)
		attempts = append(attempts, s.Attempt)
		runtime.Goexit()
		return jobs.Outcome{}, nil
	})}
	b.engine, _ = rebuild(t, b, crash)
	ctx := context.Background()
	j := b.start(t, "crash", "k", map[string]any{})
	wake := jobs.Wake{TenantID: "acme", IdempotencyKey: "k", Payload: jobs.WakePayload{Kind: "crash", JobID: j.ID, Generation: 1}}
	run := func() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = b.engine.RunWake(ctx, wake)
		}()
		<-done
	}
	for i := range 6 {
		run()
		got := b.job(t, j.ID)
		if got.Status == jobs.StatusFailed {
			break
		}
		require.Equal(t, jobs.StatusRunning, got.Status, "wake %d", i)
		require.Equal(t, i+1, got.Attempts, "the claim counted the attempt")
		time.Sleep(time.Until(got.LeaseUntil) + 100*time.Millisecond) // the lease lapses
	}
	got := b.job(t, j.ID)
	require.Equal(t, jobs.StatusFailed, got.Status, "reclaimed at most MaxAttempts times")
	require.EqualValues(t, 3, claims.Load())
	require.Equal(t, []int{1, 2, 3}, attempts)
	require.Equal(t, jobs.CodeAttemptsExhausted, got.Error.Code)
	require.Contains(t, got.Error.Message, "3 attempts")
	inc, err := b.env.Incidents().Get(ctx, got.IncidentID)
	require.NoError(t, err)
	require.Equal(t, incident.StatusOpen, inc.Status)
	require.Equal(t, jobs.CodeAttemptsExhausted, inc.ErrorCode)

	// A restart starts the count again.
	_, err = b.engine.Restart(ctx, j.ID, jobs.RestartParams{})
	require.NoError(t, err)
	require.Zero(t, b.job(t, j.ID).Attempts)
}
