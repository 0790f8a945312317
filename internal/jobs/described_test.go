package jobs_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/jobs"
)

// A kind registered by its description alone (the functions that start,
// list and schedule jobs: their steps run in jobs-worker) starts, lists and
// wakes like any other, and its wake is left for the engine that has its
// handler: an error (retried), never a poison drop, never a step.
func TestADescribedKindStartsAndRunsElsewhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	described := jobs.Kind{Name: "elsewhere", CheckArgs: func(raw json.RawMessage) error {
		var a struct {
			N int `json:"n"`
		}
		return json.Unmarshal(raw, &a)
	}}
	b := setup(t, opts{noQueue: true, kinds: []jobs.Kind{described}})
	j, created, err := b.engine.Start(ctx, jobs.StartParams{Kind: "elsewhere", TenantID: "acme", IdempotencyKey: "one", Args: json.RawMessage(`{"n":1}`)})
	require.NoError(t, err)
	require.True(t, created)
	_, _, err = b.engine.Start(ctx, jobs.StartParams{Kind: "elsewhere", TenantID: "acme", IdempotencyKey: "two", Args: json.RawMessage(`{"n":"x"}`)})
	require.True(t, jobs.IsRequestError(err), "its description checks the args: %v", err)

	w, err := b.engine.ParseWake(mustWake(t, j))
	require.NoError(t, err, "a wake of a described kind is no poison")
	require.ErrorIs(t, b.engine.RunWake(ctx, w), jobs.ErrNoHandler)
	require.Equal(t, jobs.StatusQueued, b.job(t, j.ID).Status, "no step ran")

	// The worker's engine, with the handler, runs it.
	worker := setup(t, opts{noQueue: true, kinds: []jobs.Kind{described.With(jobs.HandlerFunc(func(context.Context, jobs.Step) (jobs.Outcome, error) {
		return jobs.Done(map[string]bool{"ran": true}), nil
	}))}})
	j, _, err = worker.engine.Start(ctx, jobs.StartParams{Kind: "elsewhere", TenantID: "acme", IdempotencyKey: "one", Args: json.RawMessage(`{"n":1}`)})
	require.NoError(t, err)
	w, err = worker.engine.ParseWake(mustWake(t, j))
	require.NoError(t, err)
	require.NoError(t, worker.engine.RunWake(ctx, w))
	require.Equal(t, jobs.StatusCompleted, worker.job(t, j.ID).Status)
}

func mustWake(t *testing.T, j jobs.Job) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"tenantId": j.TenantID, "idempotencyKey": j.IdempotencyKey,
		"payload": map[string]any{"kind": j.Kind, "jobId": j.ID, "generation": j.Generation}})
	require.NoError(t, err)
	return b
}
