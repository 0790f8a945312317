package main

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/cachepurge"
	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
)

// A failed job is when an operator needs its view: `evp jobs view` shows
// it (status, the job's own error) and exits 0, as text and as JSON. The
// CLI read the job's error field as a refusal of the call and printed only
// "evp: file_not_found: …".
func TestJobsViewShowsAFailedJob(t *testing.T) {
	t.Parallel()
	st := startStack(t)
	ctx := context.Background()
	out, err := run(t, ctx, "", "jobs", "start", "file-import", "--url", st.URL(), "--tenant", "acme", "--arg", "key=imports/acme/missing.ndjson")
	require.NoError(t, err, out)
	id := regexp.MustCompile(`job_[0-9a-f]{32}`).FindString(out)
	require.NotEmpty(t, id, out)

	var j jobs.Job
	require.Eventually(t, func() bool {
		out, err = run(t, ctx, "", "jobs", "view", "--url", st.URL(), "--json", id)
		return err == nil && json.Unmarshal([]byte(out), &j) == nil && j.Status == jobs.StatusFailed
	}, 30*time.Second, 100*time.Millisecond, "the view of the failed job")
	require.Equal(t, id, j.ID)
	require.NotNil(t, j.Error)
	require.Equal(t, jobkinds.CodeFileNotFound, j.Error.Code)

	out, err = run(t, ctx, "", "jobs", "view", "--url", st.URL(), id)
	require.NoError(t, err, out)
	require.Regexp(t, `Status\s+failed`, out)
	require.Regexp(t, `Error\s+file_not_found: no file imports/acme/missing.ndjson`, out)

	// Restarting the failed job runs it again under a new generation (and
	// it fails again: the file is still missing).
	out, err = run(t, ctx, "", "jobs", "restart", "--url", st.URL(), "--json", id)
	require.NoError(t, err, out)
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	require.Equal(t, 2, j.Generation)
	require.Equal(t, jobs.StatusQueued, j.Status)
	require.Eventually(t, func() bool {
		out, err := run(t, ctx, "", "jobs", "view", "--url", st.URL(), "--json", id)
		return err == nil && json.Unmarshal([]byte(out), &j) == nil && j.Status == jobs.StatusFailed && j.Generation == 2
	}, 30*time.Second, 100*time.Millisecond, "the restarted job fails again")

	// `jobs list` shows it too; a refusal is still an error with its code.
	out, err = run(t, ctx, "", "jobs", "list", "--url", st.URL(), "--tenant", "acme", "--status", "failed")
	require.NoError(t, err, out)
	require.Regexp(t, id+`\s+file-import\s+acme\s+failed\s+\d+\s+file_not_found`, out)
	_, err = run(t, ctx, "", "jobs", "view", "--url", st.URL(), "job_00000000000000000000000000000000")
	require.ErrorContains(t, err, "not_found")
}

// `evp purge status` shows a purge that failed for good (the job's own
// error), exit 0; it printed only the error and exited 1.
func TestPurgeStatusShowsAFailedPurge(t *testing.T) {
	t.Parallel()
	st := startStack(t)
	ctx := context.Background()
	require.Equal(t, http.StatusOK, httpDo(t, http.MethodPost, st.URL()+devstack.PurgesPath+"/fail?status=403"))
	out, err := run(t, ctx, "", "purge", "tags", "--url", st.URL(), "--tenant", "acme", "tenant:acme:page:/pricing")
	require.NoError(t, err, out)
	id := regexp.MustCompile(`pj_[0-9a-f]{32}`).FindString(out)
	require.NotEmpty(t, id, out)

	var j cachepurge.Job
	require.Eventually(t, func() bool {
		out, err = run(t, ctx, "", "purge", "status", "--url", st.URL(), "--json", id)
		return err == nil && json.Unmarshal([]byte(out), &j) == nil && j.Status == cachepurge.StatusFailed
	}, 30*time.Second, 100*time.Millisecond, "the status of the failed purge")
	require.NotNil(t, j.Error)
	require.NotEmpty(t, j.Error.Code)

	out, err = run(t, ctx, "", "purge", "status", "--url", st.URL(), id)
	require.NoError(t, err, out)
	require.Regexp(t, `Status\s+failed`, out)
	require.Regexp(t, `Error\s+`+regexp.QuoteMeta(j.Error.Code)+`: `, out)

	// A refusal is still an error with its code.
	_, err = run(t, ctx, "", "purge", "status", "--url", st.URL(), "not-a-job")
	require.ErrorContains(t, err, cachepurge.CodeInvalidRequest)
}
