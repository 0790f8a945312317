package admin_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// PUT and GET /admin/tenants/{t}/retention: a tenant without a policy
// shows the platform's defaults; a policy is stored and read back; a
// shorter period starts its retention expiry (the answer names it); a
// change based on a stale version is a 409; bad periods, tenants and
// bodies are refused with their codes and store nothing.
func TestRetentionPolicyOverTheAdminAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	got := b.call(t, http.MethodGet, "/admin/tenants/acme/retention", "", "Bearer "+key)
	require.Equal(t, http.StatusOK, got.Status, got.Body)
	require.EqualValues(t, 0, got.Body["policy"].(map[string]any)["version"])
	require.Positive(t, got.Body["maxEventDays"])

	got = b.call(t, http.MethodPut, "/admin/tenants/acme/retention", `{"eventsDays":14,"incidentsDays":90,"exportsDays":30,"ifVersion":0}`, "Bearer "+key)
	require.Equal(t, http.StatusOK, got.Status, got.Body)
	require.EqualValues(t, 1, got.Body["policy"].(map[string]any)["version"])
	require.EqualValues(t, 30, got.Body["effective"].(map[string]any)["exportsDays"])
	purge, ok := got.Body["purge"].(map[string]any)
	require.True(t, ok, "a shorter period starts its purge: %v", got.Body)
	require.Equal(t, "retention-expiry", purge["kind"])

	got = b.call(t, http.MethodGet, "/admin/tenants/acme/retention", "", "Bearer "+key)
	require.EqualValues(t, 90, got.Body["policy"].(map[string]any)["incidentsDays"])
	require.Equal(t, "admin-api", got.Body["policy"].(map[string]any)["updatedBy"])

	for _, c := range []struct {
		method, path, body string
		status             int
		code               string
	}{
		{http.MethodPut, "/admin/tenants/acme/retention", `{"exportsDays":7,"ifVersion":0}`, http.StatusConflict, "version_conflict"},
		{http.MethodPut, "/admin/tenants/acme/retention", `{"eventsDays":3}`, http.StatusBadRequest, "invalid_policy"},
		{http.MethodPut, "/admin/tenants/acme/retention", `{"archivesDays":3651}`, http.StatusBadRequest, "invalid_policy"},
		{http.MethodPut, "/admin/tenants/acme/retention", `{"exportsDays":"30"}`, http.StatusBadRequest, "invalid_body"},
		{http.MethodPut, "/admin/tenants/acme/retention", `{"exportDays":30}`, http.StatusBadRequest, "invalid_body"},
		{http.MethodPut, "/admin/tenants/Acme/retention", `{}`, http.StatusBadRequest, "invalid_tenant"},
		{http.MethodPost, "/admin/tenants/acme/retention", `{}`, http.StatusMethodNotAllowed, "method_not_allowed"},
	} {
		got := b.call(t, c.method, c.path, c.body, "Bearer "+key)
		require.Equal(t, c.status, got.Status, "%s %s", c.path, c.body)
		require.Equal(t, c.code, errCode(got), "%s %s", c.path, c.body)
	}
	got = b.call(t, http.MethodGet, "/admin/tenants/acme/retention", "", "Bearer "+key)
	require.EqualValues(t, 1, got.Body["policy"].(map[string]any)["version"], "nothing refused was stored")
}

// The console shows a tenant's policy and sets it with the page's CSRF
// token (a forged one changes nothing), the version it showed included.
func TestConsoleRetentionPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.console(t, http.MethodPost, "/console/login", url.Values{"key": {key}}, "", "")
	require.Equal(t, http.StatusSeeOther, p.Status)
	cookie, _, _ := strings.Cut(p.Cookies[0], ";")

	p = b.console(t, http.MethodGet, "/console/retention?tenant=acme", nil, cookie, "")
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, `id="retention"`)
	m := csrfField.FindStringSubmatch(p.Body)
	require.NotNil(t, m)
	form := url.Values{"tenant": {"acme"}, "ifVersion": {"0"}, "eventsDays": {"0"}, "incidentsDays": {"30"}, "archivesDays": {""}, "exportsDays": {"14"}}

	forged := url.Values{"csrf": {strings.Repeat("0", len(m[1]))}}
	for k, v := range form {
		forged[k] = v
	}
	p = b.console(t, http.MethodPost, "/console/retention", forged, cookie, "")
	require.Equal(t, http.StatusForbidden, p.Status)
	got := b.call(t, http.MethodGet, "/admin/tenants/acme/retention", "", "Bearer "+key)
	require.EqualValues(t, 0, got.Body["policy"].(map[string]any)["version"], "a forged form changes nothing")

	form.Set("csrf", m[1])
	p = b.console(t, http.MethodPost, "/console/retention", form, cookie, "")
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, "Saved (version 1)")
	require.Contains(t, p.Body, "/console/jobs/job_", "the purge it started")
	got = b.call(t, http.MethodGet, "/admin/tenants/acme/retention", "", "Bearer "+key)
	require.EqualValues(t, 30, got.Body["policy"].(map[string]any)["incidentsDays"])
	require.Equal(t, "console", got.Body["policy"].(map[string]any)["updatedBy"])

	p = b.console(t, http.MethodPost, "/console/retention", form, cookie, "")
	require.Equal(t, http.StatusConflict, p.Status, "the version it showed is stale now")
	form.Set("ifVersion", "1")
	form.Set("exportsDays", "forever")
	p = b.console(t, http.MethodPost, "/console/retention", form, cookie, "")
	require.Equal(t, http.StatusBadRequest, p.Status)
	p = b.console(t, http.MethodGet, "/console/retention?tenant=NOPE", nil, cookie, "")
	require.Equal(t, http.StatusBadRequest, p.Status)
}
