package devstack_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/admin"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
)

// The console is a public surface too (HTML for a browser, so a refusal is
// a status and a page, not a JSON code): a path that is not a URL is a
// 400, a login's next can only lead to a console page of this origin,
// sign-in without the key and forms without a session are refused, a
// cookie the console never issued or that was signed out is no session,
// and a burst of wrong keys from one address is made to wait. None of it
// writes platform data; the only writes are the admin table's (sign-in
// counts, sessions).
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
	settled(t, st)
	before := snapshot(t, st)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	sendWith := func(method, path string, form url.Values, cookie string) *http.Response {
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
		if cookie != "" {
			req.Header.Set("Cookie", cookie)
		}
		resp, err := noRedirect.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	send := func(method, path string, form url.Values) *http.Response { return sendWith(method, path, form, "") }
	// A session signed out: its cookie, kept.
	signIn := send(http.MethodPost, "/console/login", url.Values{"key": {st.AdminKey()}})
	require.Equal(t, http.StatusSeeOther, signIn.StatusCode)
	signedOut, _, _ := strings.Cut(signIn.Header.Get("Set-Cookie"), ";")
	page := func() string {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, st.URL()+"/console/jobs", nil)
		require.NoError(t, err)
		req.Header.Set("Cookie", signedOut)
		resp, err := noRedirect.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		return string(b)
	}()
	token := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	require.NotNil(t, token)
	require.Equal(t, http.StatusSeeOther, sendWith(http.MethodPost, "/console/logout", url.Values{"csrf": {token[1]}}, signedOut).StatusCode)
	name, value, _ := strings.Cut(signedOut, "=")
	parts := strings.Split(value, ".")
	require.Len(t, parts, 3)

	signInWrites := []string{"DynamoDB.PutItem"} // the address's sign-in count
	for _, c := range []struct {
		name   string
		resp   func() *http.Response
		status int
		where  string   // Location, when a redirect
		writes []string // the admin table's, allowed
		retry  bool     // a Retry-After
	}{
		{name: "malformed escape", resp: func() *http.Response { return send(http.MethodGet, "/console/%zz", nil) }, status: http.StatusBadRequest},
		{name: "login redirect out through a cleaned backslash", resp: func() *http.Response {
			return send(http.MethodPost, "/console/login", url.Values{"key": {st.AdminKey()}, "next": {`/console/../\evil.com`}})
		}, status: http.StatusSeeOther, where: "/console", writes: signInWrites},
		{name: "login redirect to another origin", resp: func() *http.Response {
			return send(http.MethodPost, "/console/login", url.Values{"key": {st.AdminKey()}, "next": {"//evil.com/console"}})
		}, status: http.StatusSeeOther, where: "/console", writes: signInWrites},
		{name: "login without a key", resp: func() *http.Response {
			return send(http.MethodPost, "/console/login", url.Values{"key": {"  "}})
		}, status: http.StatusBadRequest},
		{name: "login with a wrong key", resp: func() *http.Response {
			return send(http.MethodPost, "/console/login", url.Values{"key": {"not-the-key-0000"}})
		}, status: http.StatusUnauthorized, writes: signInWrites},
		{name: "a form without a session", resp: func() *http.Response {
			return send(http.MethodPost, "/console/incidents/inc_0123456789abcdef0123456789abcdef/ignore", url.Values{"note": {"x"}})
		}, status: http.StatusUnauthorized},
		{name: "a signed-out session's cookie", resp: func() *http.Response {
			return sendWith(http.MethodGet, "/console/incidents", nil, signedOut)
		}, status: http.StatusSeeOther, where: "/console/login?next=%2Fconsole%2Fincidents"},
		{name: "a signed-out session's form", resp: func() *http.Response {
			return sendWith(http.MethodPost, "/console/incidents/inc_0123456789abcdef0123456789abcdef/ignore", url.Values{"csrf": {token[1]}, "note": {"x"}}, signedOut)
		}, status: http.StatusUnauthorized},
		{name: "a cookie never issued", resp: func() *http.Response {
			return sendWith(http.MethodGet, "/console", nil, name+"="+strings.Repeat("0", 64)+"."+parts[1]+"."+parts[2])
		}, status: http.StatusSeeOther, where: "/console/login?next=%2Fconsole"},
		{name: "a cookie with its expiry moved", resp: func() *http.Response {
			return sendWith(http.MethodGet, "/console", nil, name+"="+parts[0]+".99999999999."+parts[2])
		}, status: http.StatusSeeOther, where: "/console/login?next=%2Fconsole"},
		{name: "a cookie that is not one", resp: func() *http.Response {
			return sendWith(http.MethodGet, "/console", nil, name+"=..%00")
		}, status: http.StatusSeeOther, where: "/console/login?next=%2Fconsole"},
		{name: "a burst of wrong keys from one address", resp: func() *http.Response {
			var last *http.Response
			for range admin.DefaultSignInFree + 1 {
				last = send(http.MethodPost, "/console/login", url.Values{"key": {"not-the-key-0001"}})
			}
			return last
		}, status: http.StatusTooManyRequests, writes: signInWrites, retry: true},
	} {
		calls.Reset()
		resp := c.resp()
		require.Equal(t, c.status, resp.StatusCode, c.name)
		if c.where != "" {
			require.Equal(t, c.where, resp.Header.Get("Location"), c.name)
		}
		if c.retry {
			require.NotEmpty(t, resp.Header.Get("Retry-After"), c.name)
		}
		snap := calls.Snapshot()
		for _, op := range writeOps {
			if snap[op] > 0 && !slices.Contains(c.writes, op) {
				t.Errorf("%s: %s called", c.name, op)
			}
		}
	}
	require.Equal(t, before, snapshot(t, st), "nothing written but the admin table")
}
