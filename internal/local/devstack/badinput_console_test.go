package devstack_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
)

// The console is a public surface too (HTML for a browser, so a refusal is
// a status and a page, not a JSON code): a path that is not a URL is a
// 400, a login's next can only lead to a console page of this origin,
// sign-in without the key and forms without a session are refused — and
// none of it writes anything.
func TestBadInputOnTheConsole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	calls := awslocal.NewCalls()
	st, err := devstack.Start(ctx, devstack.Options{
		Addr: "127.0.0.1:0", Log: logging.Discard(), Env: envconf.FromMap(nil),
		APIOptions: []func(*middleware.Stack) error{calls.APIOption},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	before := snapshot(t, st)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	send := func(method, path string, form url.Values) *http.Response {
		t.Helper()
		var body *strings.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		} else {
			body = strings.NewReader("")
		}
		req, err := http.NewRequestWithContext(ctx, method, st.URL()+"/console", body)
		require.NoError(t, err)
		req.URL.Opaque = path // sent verbatim: a browser can send what url.Parse refuses
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := noRedirect.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	for _, c := range []struct {
		name   string
		resp   func() *http.Response
		status int
		where  string // Location, when a redirect
	}{
		{"malformed escape", func() *http.Response { return send(http.MethodGet, "/console/%zz", nil) }, http.StatusBadRequest, ""},
		{"login redirect out through a cleaned backslash", func() *http.Response {
			return send(http.MethodPost, "/console/login", url.Values{"key": {st.AdminKey()}, "next": {`/console/../\evil.com`}})
		}, http.StatusSeeOther, "/console"},
		{"login redirect to another origin", func() *http.Response {
			return send(http.MethodPost, "/console/login", url.Values{"key": {st.AdminKey()}, "next": {"//evil.com/console"}})
		}, http.StatusSeeOther, "/console"},
		{"login with a wrong key", func() *http.Response {
			return send(http.MethodPost, "/console/login", url.Values{"key": {"not-the-key-0000"}})
		}, http.StatusUnauthorized, ""},
		{"a form without a session", func() *http.Response {
			return send(http.MethodPost, "/console/incidents/inc_0123456789abcdef0123456789abcdef/ignore", url.Values{"note": {"x"}})
		}, http.StatusUnauthorized, ""},
	} {
		calls.Reset()
		resp := c.resp()
		require.Equal(t, c.status, resp.StatusCode, c.name)
		if c.where != "" {
			require.Equal(t, c.where, resp.Header.Get("Location"), c.name)
		}
		snap := calls.Snapshot()
		for _, op := range writeOps {
			require.Zero(t, snap[op], "%s: %s called", c.name, op)
		}
	}
	require.Equal(t, before, snapshot(t, st), "nothing written")
}
