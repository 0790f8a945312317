package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/operator"
)

// Issue 36 §4: `evp jobs download` fetches a finished export from the
// local S3 through presigned URLs: the manifest and every part, checked
// against the manifest's checksums; an export that has not finished, and
// a job that is no export, are refused with their code.
func TestJobsDownloadFetchesAFinishedExport(t *testing.T) {
	t.Parallel()
	st := startStack(t)
	ctx := context.Background()
	for i := range 3 {
		out, err := run(t, ctx, "", "publish", "--url", st.URL(), "--tenant", "dlt", "--type", "inquiry.created", "--source", "storefront",
			"--id", fmt.Sprintf("inq_dl_%d", i), "--payload", `{"name":"Ada","message":"Do you ship to Oslo?"}`)
		require.NoError(t, err, out)
	}
	out, err := run(t, ctx, "", "jobs", "start", "tenant-export", "--url", st.URL(), "--tenant", "dlt", "--arg", "pageSize=2", "--wait")
	require.NoError(t, err, out)
	id := regexp.MustCompile(`Job\s+(job_[0-9a-f]{32})`).FindStringSubmatch(out)
	require.NotNil(t, id, out)

	dir := filepath.Join(t.TempDir(), "export")
	out, err = run(t, ctx, "", "jobs", "download", id[1], "-o", dir, "--url", st.URL())
	require.NoError(t, err, out)
	require.Contains(t, out, "manifest.json")

	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	require.NoError(t, err)
	var m jobkinds.ExportManifest
	require.NoError(t, json.Unmarshal(raw, &m))
	require.Equal(t, 3, m.Events)
	require.NotEmpty(t, m.Parts)
	events := 0
	for _, p := range m.Parts {
		f, err := os.Open(filepath.Join(dir, filepath.Base(p.Key)))
		require.NoError(t, err, "part %s downloaded", p.Key)
		zr, err := gzip.NewReader(f)
		require.NoError(t, err)
		sc := bufio.NewScanner(zr)
		sc.Buffer(nil, 8<<20)
		for sc.Scan() {
			if p.Records == "events" {
				require.Contains(t, sc.Text(), "Oslo")
				events++
			}
		}
		require.NoError(t, sc.Err())
		f.Close()
	}
	require.Equal(t, 3, events, "every exported event, from the local S3")

	_, err = run(t, ctx, "", "jobs", "download", id[1], "-o", dir, "--url", st.URL())
	require.ErrorContains(t, err, "exists", "nothing is overwritten")

	// The admin API answers the same URLs.
	req, err := http.NewRequest(http.MethodGet, st.URL()+"/admin/jobs/"+id[1]+"/download", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+st.AdminKey())
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var d operator.ExportDownload
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&d))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Len(t, d.Objects, len(m.Parts)+1, "the manifest and every part")
	require.WithinDuration(t, time.Now().Add(jobkinds.DownloadTTL), d.ExpiresAt, time.Minute)
	got, err := http.Get(d.Objects[0].URL)
	require.NoError(t, err)
	body, err := io.ReadAll(got.Body)
	got.Body.Close()
	require.NoError(t, err)
	require.JSONEq(t, string(raw), string(body), "the URL reads the manifest without credentials")
	out, err = run(t, ctx, "", "jobs", "download", id[1], "-o", dir, "--force", "--url", st.URL())
	require.NoError(t, err, out)

	out, err = run(t, ctx, "", "jobs", "start", "subject-erasure", "--url", st.URL(), "--tenant", "dlt", "--arg", "subject=nobody", "--wait")
	require.NoError(t, err, out)
	other := regexp.MustCompile(`Job\s+(job_[0-9a-f]{32})`).FindStringSubmatch(out)
	require.NotNil(t, other, out)
	_, err = run(t, ctx, "", "jobs", "download", other[1], "-o", t.TempDir(), "--url", st.URL())
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "not a tenant-export"), err.Error())
	_, err = run(t, ctx, "", "jobs", "download", id[1], "--url", st.URL())
	require.ErrorContains(t, err, "-o <dir> is required")
}
