package admin_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/incident"
)

// page is a console answer.
type page struct {
	Status  int
	Headers map[string]string
	Cookies []string
	Body    string
}

// console calls a console path as API Gateway would (cookies in their own
// field, forms base64-encoded as HTTP APIs send them).
func (b *bundle) console(t *testing.T, method, target string, form url.Values, cookie, bearer string) page {
	t.Helper()
	return b.consoleFrom(t, "198.51.100.7", method, target, form, cookie, bearer)
}

// consoleFrom is console from a source address (API Gateway's sourceIp).
func (b *bundle) consoleFrom(t *testing.T, source, method, target string, form url.Values, cookie, bearer string) page {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	req := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "ANY /console/{proxy+}", RawPath: u.EscapedPath(), RawQueryString: u.RawQuery, Headers: map[string]string{},
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "req-c", HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: u.Path, SourceIP: source}},
	}
	if form != nil {
		req.Headers["content-type"] = "application/x-www-form-urlencoded"
		req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(form.Encode())), true
	}
	if cookie != "" {
		req.Cookies = []string{cookie}
	}
	if bearer != "" {
		req.Headers["authorization"] = "Bearer " + bearer
	}
	resp, err := b.api.Handle(context.Background(), req)
	require.NoError(t, err)
	return page{Status: resp.StatusCode, Headers: resp.Headers, Cookies: resp.Cookies, Body: resp.Body}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// The console behind the admin key: a login trades the key for a session
// cookie (HttpOnly, Secure, SameSite=Strict); pages show the same views as
// the JSON API; state changes need the page's CSRF token (a forged one
// changes nothing); a bearer key works for scripts; logout ends the
// session.
func TestConsoleSessionsPagesAndActions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.publish(t, "evt_con_1", "inquiry.created", "storefront", "acme")
	inc := b.deadLetter(t, "acme/evt_con_1", "crm.sync")

	p := b.console(t, http.MethodGet, "/console/incidents/"+inc.ID, nil, "", "")
	require.Equal(t, http.StatusSeeOther, p.Status, "not signed in: to the login form")
	require.Contains(t, p.Headers["Location"], "/console/login?next=")
	require.NotContains(t, p.Body, "Ada", "no data without credentials")

	p = b.console(t, http.MethodPost, "/console/login", url.Values{"key": {"wrong-key-123456"}}, "", "")
	require.Equal(t, http.StatusUnauthorized, p.Status)
	require.Empty(t, p.Cookies)
	p = b.console(t, http.MethodPost, "/console/login", url.Values{"key": {key}, "next": {"/console/incidents"}}, "", "")
	require.Equal(t, http.StatusSeeOther, p.Status)
	require.Equal(t, "/console/incidents", p.Headers["Location"])
	require.Len(t, p.Cookies, 1)
	set := p.Cookies[0]
	for _, attr := range []string{"HttpOnly", "Secure", "SameSite=Strict", "Path=/console"} {
		require.Contains(t, set, attr)
	}
	cookie, _, _ := strings.Cut(set, ";")
	p = b.console(t, http.MethodPost, "/console/login", url.Values{"key": {key}, "next": {"https://evil.example/"}}, "", "")
	require.Equal(t, "/console", p.Headers["Location"], "no open redirect")

	p = b.console(t, http.MethodGet, "/console", nil, cookie, "")
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Headers["Content-Security-Policy"], "default-src 'none'")
	require.Contains(t, p.Body, "crm.sync")
	require.Contains(t, p.Body, "<svg", "the incidents chart")

	p = b.console(t, http.MethodGet, "/console/incidents?status=open", nil, cookie, "")
	require.Equal(t, http.StatusOK, p.Status)
	require.Contains(t, p.Body, inc.ID)

	p = b.console(t, http.MethodGet, "/console/incidents/"+inc.ID, nil, cookie, "")
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, "Ada", "the payload")
	m := csrfField.FindStringSubmatch(p.Body)
	require.NotNil(t, m)
	token := m[1]

	// A forged or missing token changes nothing.
	for _, bad := range []string{"", strings.Repeat("0", len(token))} {
		p = b.console(t, http.MethodPost, "/console/incidents/"+inc.ID+"/triage", url.Values{"csrf": {bad}, "note": {"x"}}, cookie, "")
		require.Equal(t, http.StatusForbidden, p.Status)
	}
	got, err := b.incidents.Get(context.Background(), inc.ID)
	require.NoError(t, err)
	require.Equal(t, incident.StatusOpen, got.Status)

	p = b.console(t, http.MethodPost, "/console/incidents/"+inc.ID+"/triage", url.Values{"csrf": {token}, "note": {"looking"}}, cookie, "")
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, "Marked triaged")
	got, err = b.incidents.Get(context.Background(), inc.ID)
	require.NoError(t, err)
	require.Equal(t, incident.StatusTriaged, got.Status)

	// Bulk replay: a dry run counts, the confirmation names the count.
	b.publish(t, "evt_con_2", "inquiry.created", "storefront", "acme")
	b.deadLetter(t, "acme/evt_con_2", "crm.sync")
	p = b.console(t, http.MethodPost, "/console/incidents/bulk", url.Values{"csrf": {token}, "topic": {"crm.sync"}, "status": {"open"}}, cookie, "")
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, "selects <strong>1</strong> incidents")
	require.Contains(t, p.Body, "Replay 1 incidents")
	p = b.console(t, http.MethodPost, "/console/incidents/bulk", url.Values{"csrf": {token}, "topic": {"crm.sync"}, "status": {"open"}, "confirm": {"1"}}, cookie, "")
	require.Contains(t, p.Body, "Replayed <strong>1</strong> of 1")

	// Scripts: the bearer key, no cookie, no CSRF token.
	p = b.console(t, http.MethodGet, "/console/events/evt_con_1?tenant=acme", nil, "", key)
	require.Equal(t, http.StatusOK, p.Status)
	require.Contains(t, p.Body, "crm.sync")
	require.Equal(t, http.StatusSeeOther, b.console(t, http.MethodGet, "/console/events", nil, "", "wrong-key-123456").Status)

	p = b.console(t, http.MethodPost, "/console/logout", url.Values{"csrf": {token}}, cookie, "")
	require.Equal(t, http.StatusSeeOther, p.Status)
	require.Contains(t, p.Cookies[0], "Max-Age=0")
	for _, path := range []string{"/console/jobs", "/console/purge", "/console/events?tenant=acme", "/console/console.css"} {
		require.Equal(t, http.StatusOK, b.console(t, http.MethodGet, path, nil, "", key).Status, path)
	}
	require.Equal(t, http.StatusNotFound, b.console(t, http.MethodGet, "/console/nope", nil, "", key).Status)
}

// After a sign-in the browser goes to a console page of this origin and
// nowhere else: the next path is cleaned before it is checked (it was
// checked, then cleaned by http.Redirect: "/console/../\evil.com" answered
// Location: /\evil.com, which browsers open as https://evil.com/).
func TestConsoleLoginRedirectStaysOnTheConsole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for next, want := range map[string]string{
		"/console/incidents":                 "/console/incidents",
		"/console/incidents?status=open":     "/console/incidents?status=open",
		"/console":                           "/console",
		"/console/./jobs":                    "/console/jobs",
		"/console/../\\evil.com":             "/console",
		"/console/..\\evil.com":              "/console",
		"/console/../evil":                   "/console",
		"/console/%2e%2e/%5Cevil.com":        "/console",
		"/consolex":                          "/console",
		"//evil.com/console":                 "/console",
		"https://evil.com/console":           "/console",
		"/console\r\nSet-Cookie: x=1":        "/console",
		"/console/%0d%0aLocation:%20//e.com": "/console",
		"javascript:alert(1)":                "/console",
		"":                                   "/console",
	} {
		p := b.console(t, http.MethodPost, "/console/login", url.Values{"key": {key}, "next": {next}}, "", "")
		require.Equal(t, http.StatusSeeOther, p.Status, "next %q", next)
		require.Equal(t, want, p.Headers["Location"], "next %q", next)
	}
	// A link that carries the attack into the form gets the safe value.
	p := b.console(t, http.MethodGet, "/console/login?next="+url.QueryEscape("/console/../\\evil.com"), nil, "", "")
	require.Equal(t, http.StatusOK, p.Status)
	require.NotContains(t, p.Body, "evil.com")
}

// A path that is not a URL is a 400 before authentication, never a panic
// (the console built its request with net/http/httptest, which panics on
// "/console/%zz").
func TestConsoleMalformedPathIsABadRequest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, raw := range []string{"/console/%zz", "/console/%", "/console/incidents/%G0"} {
		resp, err := b.api.Handle(context.Background(), events.APIGatewayV2HTTPRequest{
			RawPath:        raw,
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodGet}},
		})
		require.NoError(t, err, raw)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, raw)
	}
}

// Issue 36 §2: the event and incident pages show each dispatch's delivery
// attempts as a timeline, the subscriber's answer quoted (and escaped).
func TestConsoleShowsTheDeliveryAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.publish(t, "evt_con_tl", "inquiry.created", "storefront", "acme")
	b.tried(t, "acme/evt_con_tl", "crm.sync", time.Now().UTC().Add(-time.Hour), 503, 503)
	inc := b.deadLetter(t, "acme/evt_con_tl", "crm.sync")

	p := b.console(t, http.MethodGet, "/console/events/evt_con_tl?tenant=acme", nil, "", key)
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, `<h2 id="attempts-crm.sync">crm.sync: delivery attempts</h2>`)
	require.Equal(t, 2, strings.Count(p.Body, `<li class="o-failed">`), "both attempts, in order")
	require.Contains(t, p.Body, `<code>&#34;busy&#34;</code>`, "the answer quoted, escaped")
	require.Contains(t, p.Body, `<span class="badge">retry</span>`)
	require.Contains(t, p.Body, "in 20 ms")

	p = b.console(t, http.MethodGet, "/console/incidents/"+inc.ID, nil, "", key)
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, "<h2>Delivery attempts</h2>")
	require.Equal(t, 2, strings.Count(p.Body, `<li class="o-failed">`))
}

// Issue 36 §4: the overview an operator keeps open says when it was
// rendered and reloads itself (no script), shows each topic's last error
// as text, charts the incidents per hour with labelled axes, and pauses or
// resumes a topic from one form for the whole table (then back to the
// overview, which says what changed).
func TestConsoleOverviewAnOperatorKeepsOpen(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.publish(t, "evt_ov_1", "inquiry.created", "storefront", "acme")
	b.deadLetter(t, "acme/evt_ov_1", "crm.sync")

	// A session, as a browser has.
	login := b.console(t, http.MethodPost, "/console/login", url.Values{"key": {key}}, "", "")
	cookie, _, _ := strings.Cut(login.Cookies[0], ";")
	p := b.console(t, http.MethodGet, "/console", nil, cookie, "")
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Regexp(t, `<p class="muted" id="rendered">Rendered \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ; reloads every minute.</p>`, p.Body)
	require.Contains(t, p.Body, `<meta http-equiv="refresh" content="60">`)
	require.Contains(t, p.Body, `http_503: subscriber answered 503</a>`, "the last error as text, linked to its incident")
	require.Contains(t, p.Body, `>hour (UTC)</text>`, "the x axis is labelled")
	require.Contains(t, p.Body, `>incidents opened</text>`, "the y axis is labelled")
	require.Regexp(t, `<text [^>]*class="tick">\d\d:00</text>`, p.Body, "hours along the bottom")
	require.Regexp(t, `<text [^>]*class="tick">1</text>`, p.Body, "the scale up the side")
	require.NotContains(t, p.Body, "<script")
	require.Equal(t, 2, strings.Count(p.Body, "<form"), "one form for the topics (and the sign-out's), not one per row")
	require.Contains(t, p.Body, `<button type="submit" name="pause" value="crm.sync" class="secondary" id="pause-crm.sync">Pause</button>`)
	token := csrfField.FindStringSubmatch(p.Body)
	require.NotNil(t, token)
	p = b.console(t, http.MethodPost, "/console/topics", url.Values{"csrf": {token[1]}, "pause": {"crm.sync"}, "reason": {"vendor maintenance"}}, cookie, "")
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Equal(t, "/console?paused=crm.sync", p.Headers["Location"])
	p = b.console(t, http.MethodGet, "/console?paused=crm.sync", nil, cookie, "")
	require.Contains(t, p.Body, "crm.sync paused: its deliveries stop")
	require.Contains(t, p.Body, `id="resume-crm.sync">Resume</button>`)
	require.Contains(t, p.Body, "vendor maintenance", "the reason shows")
	p = b.console(t, http.MethodPost, "/console/topics", url.Values{"csrf": {token[1]}, "resume": {"crm.sync"}}, cookie, "")
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Equal(t, "/console?resumed=crm.sync", p.Headers["Location"])
	p = b.console(t, http.MethodGet, "/console?resumed=nope.topic", nil, cookie, "")
	require.NotContains(t, p.Body, "nope.topic", "no free text from the link")
	p = b.console(t, http.MethodPost, "/console/topics", url.Values{"csrf": {token[1]}}, cookie, "")
	require.Equal(t, http.StatusBadRequest, p.Status)
}
