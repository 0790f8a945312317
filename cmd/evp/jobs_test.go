package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/wire/jobsworkerfn"
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

	// A completed job is not re-run: its help says "failed or cancelled".
	out, err = run(t, ctx, "", "jobs", "restart", "--url", st.URL(), "--from-scratch", "--json", id[1])
	require.ErrorContains(t, err, "transition_not_allowed", out)
	require.ErrorContains(t, err, "start a new one")
	require.NoError(t, json.Unmarshal([]byte(mustRun(t, ctx, "jobs", "view", "--url", st.URL(), "--json", id[1])), &j))
	require.Equal(t, jobs.StatusCompleted, j.Status)
	require.Equal(t, 1, j.Generation, "not run again")
}

// mustRun runs evp and fails the test on an error.
func mustRun(t *testing.T, ctx context.Context, args ...string) string {
	t.Helper()
	out, err := run(t, ctx, "", args...)
	require.NoError(t, err, out)
	return out
}

func TestProgressLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		p    *jobs.Progress
		want string
	}{
		{"none", nil, ""},
		{"of a total", &jobs.Progress{Done: 700, Total: 1400, Unit: "bytes"}, "700 of 1400 bytes (50%)"},
		{"no total", &jobs.Progress{Done: 12, Unit: "events"}, "12 events"},
		{"no unit", &jobs.Progress{Done: 3, Total: 4}, "3 of 4 units (75%)"},
		{"counts in name order", &jobs.Progress{Done: 1400, Total: 1400, Unit: "bytes", Counts: map[string]int64{"read": 3, "accepted": 2, "rejected": 1}},
			"1400 of 1400 bytes (100%); accepted 2, read 3, rejected 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, progressLine(tc.p))
		})
	}
}

// `evp jobs view --wait` follows a running file import to its end,
// printing its progress (bytes read of the file's, the records' counts)
// as it moves and in the final view.
func TestJobsViewWaitShowsProgress(t *testing.T) {
	t.Parallel()
	st, err := devstack.Start(context.Background(), devstack.Options{Addr: "127.0.0.1:0", Prefix: awslocal.NewPrefix(), Log: logging.Discard(), Env: envconf.FromMap(nil),
		Settings: map[string]string{jobsworkerfn.EnvImportStepRecords: "5"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	ctx := context.Background()
	var body bytes.Buffer
	for i := range 200 {
		fmt.Fprintf(&body, `{"schemaVersion":1,"id":"imp-view-%03d","type":"audit.record.imported","source":"platform","timestamp":"2026-12-01T10:00:00Z","payload":{"i":%d}}`+"\n", i, i)
	}
	key := "imports/acme/view.ndjson"
	_, err = st.Clients.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(st.Resources.Bucket), Key: aws.String(key), Body: bytes.NewReader(body.Bytes())})
	require.NoError(t, err)

	// The stack's S3 notification starts the import.
	var id string
	require.Eventually(t, func() bool {
		out, err := run(t, ctx, "", "jobs", "list", "--url", st.URL(), "--tenant", "acme", "--kind", "file-import")
		id = regexp.MustCompile(`job_[0-9a-f]{32}`).FindString(out)
		return err == nil && id != ""
	}, 30*time.Second, 50*time.Millisecond)

	out, err := run(t, ctx, "", "jobs", "view", "--url", st.URL(), "--wait", id)
	require.NoError(t, err, out)
	require.Regexp(t, `Status\s+completed`, out)
	total := body.Len()
	require.Regexp(t, fmt.Sprintf(`Progress\s+%d of %d bytes \(100%%\); accepted 200, duplicates 0, read 200, rejected 0`, total, total), out)
	// Lines while it ran (not a terminal: one per change), with the
	// progress the last committed step reported.
	require.Regexp(t, id+` (queued|running)\s+step \d+, attempt \d+, generation 1; \d+ of \d+ bytes \(\d+%\); accepted \d+, duplicates 0, read \d+, rejected 0\n`, out)

	_, err = run(t, ctx, "", "jobs", "view", "--url", st.URL(), "--wait", "job_00000000000000000000000000000000")
	require.ErrorContains(t, err, "not_found")
}
