package devstack_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/local/devstack/devstacktest"
	"github.com/siteswarm/eventplatform/internal/topology"
)

func importLines(prefix string, n int) []byte {
	var buf bytes.Buffer
	for i := range n {
		fmt.Fprintf(&buf, `{"schemaVersion":1,"id":"%s-%d","type":"inquiry.created","source":"storefront","timestamp":"2026-12-01T10:00:00Z","payload":{"i":%d}}`+"\n", prefix, i, i)
	}
	return buf.Bytes()
}

func waitJob(t *testing.T, st *devstack.Stack, id string) map[string]any {
	t.Helper()
	var job map[string]any
	require.Eventually(t, func() bool {
		_, job = devstacktest.AdminDo(t, st, http.MethodGet, "/admin/jobs/"+id, nil)
		return job["status"] == "completed" || job["status"] == "failed"
	}, 60*time.Second, 100*time.Millisecond, "job %v", &job)
	require.Equal(t, "completed", job["status"], job)
	return job
}

// make dev delivers the bucket's S3 notifications for imports/ to the
// import job: a gzip file put under imports/acme/ is imported without
// anyone starting a job, its records delivered to their topics; putting it
// again (a new version) is a new import whose records are all duplicates;
// POST /admin/jobs imports a file already there.
func TestAFileDroppedUnderImportsIsImportedByTheLocalStack(t *testing.T) {
	t.Parallel()
	st := startStack(t)
	ctx := context.Background()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(importLines("drop", 25))
	require.NoError(t, zw.Close())
	key := "imports/acme/2026-12-01/drop.ndjson.gz"
	put := func() {
		_, err := st.Clients.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(st.Resources.Bucket), Key: aws.String(key), Body: bytes.NewReader(gz.Bytes())})
		require.NoError(t, err)
	}
	put()
	imports := func() []any {
		_, list := devstacktest.AdminDo(t, st, http.MethodGet, "/admin/jobs?tenant=acme&kind=file-import", nil)
		items, _ := list["jobs"].([]any)
		return items
	}
	require.Eventually(t, func() bool { return len(imports()) == 1 }, 30*time.Second, 100*time.Millisecond, "the notification starts an import")
	id := imports()[0].(map[string]any)["jobId"].(string)
	job := waitJob(t, st, id)
	res := job["result"].(map[string]any)
	require.Equal(t, 25.0, res["read"], job)
	require.Equal(t, 25.0, res["accepted"], job)
	require.Equal(t, true, res["gzip"])
	// The view shows the import's progress: the whole file read, the counts.
	require.Equal(t, map[string]any{"done": float64(gz.Len()), "total": float64(gz.Len()), "unit": "bytes",
		"counts": map[string]any{"read": 25.0, "accepted": 25.0, "duplicates": 0.0, "rejected": 0.0}}, job["progress"], job)
	require.Eventually(t, func() bool { return len(st.Sink.Deliveries(topology.Notifications)) >= 25 }, 30*time.Second, 100*time.Millisecond)

	put() // a new version of the file
	require.Eventually(t, func() bool { return len(imports()) == 2 }, 30*time.Second, 100*time.Millisecond)
	second := imports()[0].(map[string]any)["jobId"].(string)
	require.NotEqual(t, id, second)
	res = waitJob(t, st, second)["result"].(map[string]any)
	require.Equal(t, 25.0, res["duplicates"])
	require.Equal(t, 0.0, res["accepted"])

	status, started := devstacktest.AdminDo(t, st, http.MethodPost, "/admin/jobs", map[string]any{"kind": "file-import", "tenantId": "acme", "args": map[string]any{"key": key}})
	require.Equal(t, http.StatusCreated, status, started)
	res = waitJob(t, st, started["jobId"].(string))["result"].(map[string]any)
	require.Equal(t, 25.0, res["duplicates"])

	status, refused := devstacktest.AdminDo(t, st, http.MethodPost, "/admin/jobs", map[string]any{"kind": "file-import", "tenantId": "globex", "args": map[string]any{"key": key}})
	require.Equal(t, http.StatusBadRequest, status, refused)
	b, _ := json.Marshal(refused)
	require.Contains(t, string(b), "invalid_args")
	require.Len(t, imports(), 3)
}
