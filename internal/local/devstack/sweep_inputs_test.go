package devstack_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/local/devstack/devstacktest"
)

// jobs-sweep answers what the stage's EventBridge rules send it (infra/cdk
// TestJobsEngine pins those inputs): the sweep every 15 minutes, and the
// daily Stripe reconciliation's first run of the day, which starts the
// day's job (a conditional put and a wake) that jobs-worker completes; a
// second call the same day finds it. Only a deployed stage's schedule
// makes the daily call, so this test is what records it for make
// iam-check.
func TestJobsSweepAnswersTheStagesScheduledInputs(t *testing.T) {
	t.Parallel()
	st := startStack(t)
	ctx := context.Background()

	out, err := st.Invoke(ctx, devstack.FunctionJobsSweep, []byte(`{"action":"sweep"}`))
	require.NoError(t, err)
	require.NotContains(t, string(out), "errorMessage")

	daily := []byte(`{"action":"daily","kind":"stripe-reconcile","tenantId":"platform"}`)
	out, err = st.Invoke(ctx, devstack.FunctionJobsSweep, daily)
	require.NoError(t, err)
	var started struct {
		JobID   string `json:"jobId"`
		Created bool   `json:"created"`
	}
	require.NoError(t, json.Unmarshal(out, &started), string(out))
	require.NotEmpty(t, started.JobID, string(out))
	require.True(t, started.Created)

	var job map[string]any
	require.Eventually(t, func() bool {
		_, job = devstacktest.AdminDo(t, st, http.MethodGet, "/admin/jobs/"+started.JobID, nil)
		return job["status"] == "completed" || job["status"] == "failed"
	}, 30*time.Second, 100*time.Millisecond, "job %v", &job)
	require.Equal(t, "completed", job["status"], job)

	out, err = st.Invoke(ctx, devstack.FunctionJobsSweep, daily)
	require.NoError(t, err)
	var again struct {
		JobID   string `json:"jobId"`
		Created bool   `json:"created"`
	}
	require.NoError(t, json.Unmarshal(out, &again), string(out))
	require.Equal(t, started.JobID, again.JobID, "the date is the key: the same job")
	require.False(t, again.Created)
}
