package main

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/jobs"
)

func TestParseArgs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   []string
		want string
		err  bool
	}{
		{nil, `{}`, false},
		{[]string{"subject=cus_1", "lookbackDays=2", "dryRun=true"}, `{"subject":"cus_1","lookbackDays":2,"dryRun":true}`, false},
		{[]string{`subject="123"`, "note=a=b"}, `{"subject":"123","note":"a=b"}`, false},
		{[]string{"empty="}, `{"empty":""}`, false},
		{[]string{"novalue"}, "", true},
		{[]string{"=x"}, "", true},
	} {
		got, err := parseArgs(c.in)
		if c.err {
			require.Error(t, err, c.in)
			continue
		}
		require.NoError(t, err)
		require.JSONEq(t, c.want, string(got), c.in)
	}
}

// `evp jobs` against the local stack: start an export and wait for it,
// the same key returns the same job, list and view it, refusals carry
// their code, cancel and restart a job.
func TestJobsCommands(t *testing.T) {
	t.Parallel()
	st := startStack(t)
	ctx := context.Background()
	out, err := run(t, ctx, "", "jobs", "start", "tenant-export", "--url", st.URL(), "--tenant", "acme", "--key", "exp-1", "--arg", "pageSize=10", "--wait")
	require.NoError(t, err, out)
	require.Regexp(t, `Status\s+completed`, out)
	require.Regexp(t, `Result\s+\{"events":0,"incidents":0,"manifestKey":"jobs/job_[0-9a-f]+/`, out)
	id := regexp.MustCompile(`Job\s+(job_[0-9a-f]{32})`).FindStringSubmatch(out)
	require.NotNil(t, id, out)

	out, err = run(t, ctx, "", "jobs", "start", "tenant-export", "--url", st.URL(), "--tenant", "acme", "--key", "exp-1", "--arg", "pageSize=10")
	require.NoError(t, err, out)
	require.Equal(t, "the key already started job "+id[1]+"\n"+id[1]+" completed\n", out, "the key's job")

	out, err = run(t, ctx, "", "jobs", "list", "--url", st.URL(), "--tenant", "acme")
	require.NoError(t, err, out)
	require.Regexp(t, id[1]+`\s+tenant-export\s+acme\s+completed`, out)

	out, err = run(t, ctx, "", "jobs", "view", "--url", st.URL(), "--json", id[1])
	require.NoError(t, err, out)
	var j jobs.Job
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	require.Equal(t, jobs.StatusCompleted, j.Status)

	_, err = run(t, ctx, "", "jobs", "start", "subject-erasure", "--url", st.URL(), "--tenant", "acme")
	require.ErrorContains(t, err, "invalid_args")
	_, err = run(t, ctx, "", "jobs", "start", "nope", "--url", st.URL(), "--tenant", "acme")
	require.ErrorContains(t, err, "unknown_kind")
	_, err = run(t, ctx, "", "jobs", "view", "--url", st.URL(), "job_00000000000000000000000000000000")
	require.ErrorContains(t, err, "not_found")
	_, err = run(t, ctx, "", "jobs", "cancel", "--url", st.URL(), id[1])
	require.ErrorContains(t, err, "transition_not_allowed", "a completed job cannot be cancelled")

	// Restarting from scratch runs it again under a new generation.
	out, err = run(t, ctx, "", "jobs", "restart", "--url", st.URL(), "--from-scratch", "--json", id[1])
	require.NoError(t, err, out)
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	require.Equal(t, 2, j.Generation)
	require.Equal(t, jobs.StatusQueued, j.Status)
	require.Zero(t, j.Steps)
	require.Eventually(t, func() bool {
		out, err := run(t, ctx, "", "jobs", "view", "--url", st.URL(), "--json", id[1])
		return err == nil && json.Unmarshal([]byte(out), &j) == nil && j.Status == jobs.StatusCompleted
	}, 20*time.Second, 100*time.Millisecond)
	require.Equal(t, 2, j.Generation)
}
