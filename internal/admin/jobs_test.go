package admin_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/admin"
	"github.com/siteswarm/eventplatform/internal/jobkinds"
)

// The durable job routes: start (created, then the same job for the same
// key), refusals with their codes, view, list with filters, cancel and
// restart (a new generation), behind the admin key.
func TestJobAdminRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	post := func(path, body string) answer { return b.call(t, http.MethodPost, path, body, "Bearer "+key) }

	require.Equal(t, http.StatusUnauthorized, b.call(t, http.MethodGet, "/admin/jobs", "", "").Status)
	require.Equal(t, http.StatusUnauthorized, b.call(t, http.MethodPost, "/admin/jobs", `{"kind":"tenant-export","tenantId":"acme"}`, "Bearer wrong-key-123456").Status)

	start := `{"kind":"tenant-export","tenantId":"acme","idempotencyKey":"export-1","args":{"pageSize":50}}`
	a := post("/admin/jobs", start)
	require.Equal(t, http.StatusCreated, a.Status, a.Body)
	id, _ := a.Body["jobId"].(string)
	require.NotEmpty(t, id)
	require.Equal(t, "queued", a.Body["status"])
	a = post("/admin/jobs", start)
	require.Equal(t, http.StatusOK, a.Status, "a retried start is the same job")
	require.Equal(t, id, a.Body["jobId"])

	for _, c := range []struct {
		body   string
		status int
		code   string
	}{
		{`{"kind":"tenant-export","tenantId":"acme","idempotencyKey":"export-1","args":{"pageSize":60}}`, http.StatusConflict, "idempotency_conflict"},
		{`{"kind":"nope","tenantId":"acme"}`, http.StatusBadRequest, "unknown_kind"},
		{`{"kind":"tenant-export","tenantId":"acme","args":{"pageSize":"many"}}`, http.StatusBadRequest, "invalid_args"},
		{`{"kind":"subject-erasure","tenantId":"acme","args":{}}`, http.StatusBadRequest, "invalid_args"},
		{`{"kind":"tenant-export","tenantId":"NOT OK"}`, http.StatusBadRequest, "invalid_request"},
		{`{"tenantId":"acme"}`, http.StatusBadRequest, "invalid_body"},
		{`not json`, http.StatusBadRequest, "invalid_body"},
	} {
		a := post("/admin/jobs", c.body)
		require.Equal(t, c.status, a.Status, c.body)
		require.Equal(t, c.code, errCode(a), c.body)
	}

	a = b.get(t, "/admin/jobs/"+id)
	require.Equal(t, http.StatusOK, a.Status)
	require.Equal(t, "tenant-export", a.Body["kind"])
	require.Equal(t, "acme", a.Body["tenantId"])
	require.EqualValues(t, 1, a.Body["generation"])
	require.Equal(t, map[string]any{"pageSize": 50.0}, a.Body["args"])
	require.NotContains(t, a.Body, "checkpoint", "internals stay inside")
	a = b.get(t, "/admin/jobs/job_00000000000000000000000000000000")
	require.Equal(t, http.StatusNotFound, a.Status)
	require.Equal(t, "not_found", errCode(a))

	other := post("/admin/jobs", `{"kind":"subject-erasure","tenantId":"globex","args":{"subject":"cus_1"}}`)
	require.Equal(t, http.StatusCreated, other.Status, other.Body)
	for _, c := range []struct {
		query string
		want  []any
	}{
		{"?tenant=acme", []any{id}},
		{"?tenant=globex&kind=subject-erasure", []any{other.Body["jobId"]}},
		{"?kind=tenant-export&status=queued", []any{id}},
		{"?tenant=acme&status=completed", nil},
	} {
		a := b.get(t, "/admin/jobs"+c.query)
		require.Equal(t, http.StatusOK, a.Status, c.query)
		var got []any
		for _, j := range a.Body["jobs"].([]any) {
			got = append(got, j.(map[string]any)["jobId"])
		}
		require.Equal(t, c.want, got, c.query)
	}

	// A download is for a finished export only.
	a = b.get(t, "/admin/jobs/"+id+"/download")
	require.Equal(t, http.StatusConflict, a.Status, a.Body)
	require.Equal(t, jobkinds.CodeNotDownloadable, errCode(a))
	require.Equal(t, jobkinds.CodeNotDownloadable, admin.CodeNotDownloadable)
	require.Equal(t, http.StatusNotFound, b.get(t, "/admin/jobs/job_00000000000000000000000000000000/download").Status)

	a = post("/admin/jobs/"+id+"/cancel", "")
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	require.Equal(t, "cancelled", a.Body["status"])
	require.EqualValues(t, 2, a.Body["generation"], "cancel bumps the generation: in-flight wakes are stale")
	a = post("/admin/jobs/"+id+"/restart", `{"note":"try again"}`)
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	require.Equal(t, "queued", a.Body["status"])
	require.EqualValues(t, 3, a.Body["generation"])
	require.Equal(t, http.StatusMethodNotAllowed, b.get(t, "/admin/jobs/"+id+"/cancel").Status)
	require.Equal(t, http.StatusNotFound, post("/admin/jobs/"+id+"/explode", "").Status)
}
