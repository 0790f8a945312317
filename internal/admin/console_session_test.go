package admin_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/admin"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/wire/wiretest"
)

// clock is a test clock near the wall clock (the admin table's items carry
// a TTL), moved by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Now().UTC().Truncate(time.Second)} }

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

// setupClocked is setup with the admin API on clk and extra settings.
func setupClocked(t *testing.T, clk *clock, settings map[string]string) *bundle {
	t.Helper()
	env := awslocaltest.NewEnv(t)
	return &bundle{env: env, api: wiretest.Admin(t, env, key, wiretest.Opts{Now: clk.Now, Settings: settings})}
}

// signIn signs in from source and returns the cookie ("name=value").
func (b *bundle) signIn(t *testing.T, source string) string {
	t.Helper()
	p := b.consoleFrom(t, source, http.MethodPost, "/console/login", url.Values{"key": {key}}, "", "")
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Len(t, p.Cookies, 1)
	cookie, _, _ := strings.Cut(p.Cookies[0], ";")
	return cookie
}

// csrfOf is the CSRF token on a page the session can see.
func (b *bundle) csrfOf(t *testing.T, cookie string) string {
	t.Helper()
	p := b.console(t, http.MethodGet, "/console/jobs", nil, cookie, "")
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	m := csrfField.FindStringSubmatch(p.Body)
	require.NotNil(t, m, "the page has a form")
	return m[1]
}

func signedIn(p page) bool { return p.Status == http.StatusOK }

// Signing out ends the session on the server: a copy of the cookie (a
// stolen one, another tab) stops working at once, and so does its CSRF
// token. (The cookie was exp.HMAC(key) with nothing server-side: logout
// only cleared it in the browser that asked.)
func TestConsoleSignOutEndsTheSessionEverywhere(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cookie := b.signIn(t, "198.51.100.7")
	token := b.csrfOf(t, cookie)
	stolen := cookie

	p := b.console(t, http.MethodPost, "/console/logout", url.Values{"csrf": {token}}, cookie, "")
	require.Equal(t, http.StatusSeeOther, p.Status)
	require.Equal(t, "/console/login", p.Headers["Location"])
	require.Contains(t, p.Cookies[0], "Max-Age=0")

	p = b.console(t, http.MethodGet, "/console", nil, stolen, "")
	require.Equal(t, http.StatusSeeOther, p.Status, "the copied cookie is signed out too")
	require.Contains(t, p.Headers["Location"], "/console/login")
	p = b.console(t, http.MethodPost, "/console/incidents/bulk", url.Values{"csrf": {token}, "topic": {"crm.sync"}}, stolen, "")
	require.Equal(t, http.StatusUnauthorized, p.Status, "and its forms")
	require.True(t, signedIn(b.console(t, http.MethodGet, "/console", nil, "", key)), "the key itself still works")
}

// Each sign-in is its own session: two in the same second get different
// cookies and CSRF tokens (they were identical), and signing one out
// leaves the other.
func TestConsoleTwoSignInsAreTwoSessions(t *testing.T) {
	t.Parallel()
	clk := newClock()
	b := setupClocked(t, clk, nil)
	first, second := b.signIn(t, "198.51.100.7"), b.signIn(t, "198.51.100.7")
	require.NotEqual(t, first, second)
	t1, t2 := b.csrfOf(t, first), b.csrfOf(t, second)
	require.NotEqual(t, t1, t2)

	// One session's token is no good with the other's cookie.
	p := b.console(t, http.MethodPost, "/console/logout", url.Values{"csrf": {t1}}, second, "")
	require.Equal(t, http.StatusForbidden, p.Status)

	p = b.console(t, http.MethodPost, "/console/logout", url.Values{"csrf": {t1}}, first, "")
	require.Equal(t, http.StatusSeeOther, p.Status)
	require.False(t, signedIn(b.console(t, http.MethodGet, "/console", nil, first, "")))
	require.True(t, signedIn(b.console(t, http.MethodGet, "/console", nil, second, "")), "the other sign-in is still on")
}

// A session ends after its lifetime however busy it is, and earlier when
// nobody uses it for the idle limit; a forged or tampered cookie is no
// session at all.
func TestConsoleSessionLifetimeAndIdleLimit(t *testing.T) {
	t.Parallel()
	clk := newClock()
	b := setupClocked(t, clk, map[string]string{"CONSOLE_SESSION_TTL": "2h", "CONSOLE_SESSION_IDLE": "30m"})

	busy := b.signIn(t, "198.51.100.7")
	idle := b.signIn(t, "198.51.100.7")
	for range 3 { // 1h30 of use, a request every 29 minutes
		clk.Add(29 * time.Minute)
		require.True(t, signedIn(b.console(t, http.MethodGet, "/console/jobs", nil, busy, "")))
	}
	require.False(t, signedIn(b.console(t, http.MethodGet, "/console/jobs", nil, idle, "")), "idle for 87 minutes")
	clk.Add(29 * time.Minute)
	require.True(t, signedIn(b.console(t, http.MethodGet, "/console/jobs", nil, busy, "")), "1h56: still within 2h")
	clk.Add(5 * time.Minute)
	require.False(t, signedIn(b.console(t, http.MethodGet, "/console/jobs", nil, busy, "")), "2h01: over the lifetime")

	fresh := b.signIn(t, "198.51.100.7")
	name, value, _ := strings.Cut(fresh, "=")
	parts := strings.Split(value, ".")
	require.Len(t, parts, 3)
	later := strconv.FormatInt(clk.Now().Add(24*time.Hour).Unix(), 10)
	unstarted := strings.Repeat("b", 64)
	signed := func(sid, exp string) string {
		m := hmac.New(sha256.New, []byte(key))
		m.Write([]byte("session|" + sid + "|" + exp))
		return hex.EncodeToString(m.Sum(nil))
	}
	require.Equal(t, parts[2], signed(parts[0], parts[1]), "the test signs as the console does")
	for what, forged := range map[string]string{
		"a later expiry":     parts[0] + "." + later + "." + parts[2],
		"another session id": strings.Repeat("a", 64) + "." + parts[1] + "." + parts[2],
		"no MAC":             parts[0] + "." + parts[1] + ".",
		"the old format":     parts[1] + "." + parts[2],
		// Signed with the key but never started server-side (as a
		// cookie minted before this release).
		"a signed id never started": unstarted + "." + parts[1] + "." + signed(unstarted, parts[1]),
	} {
		require.False(t, signedIn(b.console(t, http.MethodGet, "/console/jobs", nil, name+"="+forged, "")), what)
	}
	require.True(t, signedIn(b.console(t, http.MethodGet, "/console/jobs", nil, fresh, "")))
}

// Wrong keys from one address back off: a few are checked, then the
// address waits (429, Retry-After) — for a right key too, since a guess
// that happens to be right must not get through while it waits — twice as
// long after each further failure. Another address signs in meanwhile, and
// a right key after the wait starts the address over. (Wrong keys were
// limited only by the route throttle.)
func TestConsoleFailedSignInsBackOffPerAddress(t *testing.T) {
	t.Parallel()
	clk := newClock()
	b := setupClocked(t, clk, nil)
	attacker, operator := "203.0.113.9", "198.51.100.7"
	wrong := url.Values{"key": {"wrong-key-0000001"}}
	for i := range admin.DefaultSignInFree {
		p := b.consoleFrom(t, attacker, http.MethodPost, "/console/login", wrong, "", "")
		require.Equal(t, http.StatusUnauthorized, p.Status, "attempt %d is checked", i+1)
	}
	p := b.consoleFrom(t, attacker, http.MethodPost, "/console/login", wrong, "", "")
	require.Equal(t, http.StatusTooManyRequests, p.Status)
	require.Equal(t, "2", p.Headers["Retry-After"])
	require.Contains(t, p.Body, "Too many failed sign-ins")
	require.Empty(t, p.Cookies)
	p = b.consoleFrom(t, attacker, http.MethodPost, "/console/login", url.Values{"key": {key}}, "", "")
	require.Equal(t, http.StatusTooManyRequests, p.Status, "not even a right key while the address waits")
	require.Empty(t, p.Cookies)

	require.NotEmpty(t, b.signIn(t, operator), "another address is not locked out")
	require.NotEmpty(t, b.signIn(t, "2001:db8:1:2::1"), "nor another network")

	clk.Add(2 * time.Second)
	p = b.consoleFrom(t, attacker, http.MethodPost, "/console/login", wrong, "", "")
	require.Equal(t, http.StatusUnauthorized, p.Status, "after the wait, one more is checked")
	p = b.consoleFrom(t, attacker, http.MethodPost, "/console/login", wrong, "", "")
	require.Equal(t, http.StatusTooManyRequests, p.Status)
	require.Equal(t, "4", p.Headers["Retry-After"], "and the wait doubles")

	clk.Add(4 * time.Second)
	b.signIn(t, attacker) // the right key after the wait
	for i := range admin.DefaultSignInFree {
		p := b.consoleFrom(t, attacker, http.MethodPost, "/console/login", wrong, "", "")
		require.Equal(t, http.StatusUnauthorized, p.Status, "started over: attempt %d is checked", i+1)
	}
	// IPv6 addresses count by their /64: one host's share.
	for i := range admin.DefaultSignInFree {
		b.consoleFrom(t, "2001:db8:9:9::"+strconv.Itoa(i+1), http.MethodPost, "/console/login", wrong, "", "")
	}
	p = b.consoleFrom(t, "2001:db8:9:9::ff", http.MethodPost, "/console/login", wrong, "", "")
	require.Equal(t, http.StatusTooManyRequests, p.Status, "the /64 waits")
}

// A burst of wrong keys from one address, sent at once, gets no more keys
// checked than a slow one: each attempt is counted before its key is, in
// a conditional write, so none slips past the count.
func TestConsoleSignInBurstIsCountedExactly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var checked, refused atomic.Int32
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Go(func() {
			p := b.consoleFrom(t, "203.0.113.50", http.MethodPost, "/console/login", url.Values{"key": {"wrong-key-" + strconv.Itoa(1000000+i)}}, "", "")
			switch p.Status {
			case http.StatusUnauthorized:
				checked.Add(1)
			case http.StatusTooManyRequests:
				refused.Add(1)
			default:
				t.Errorf("status %d: %s", p.Status, p.Body)
			}
		})
	}
	wg.Wait()
	require.Equal(t, int32(admin.DefaultSignInFree), checked.Load(), "keys checked")
	require.Equal(t, int32(30-admin.DefaultSignInFree), refused.Load())
}

// adminFrom calls the JSON API from source with authorization (the whole
// header value; "" sends none).
func (b *bundle) adminFrom(t *testing.T, source, target, authorization string) (int, map[string]string) {
	t.Helper()
	req := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "ANY /admin/{proxy+}", RawPath: target, Headers: map[string]string{},
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "req-b", HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodGet, Path: target, SourceIP: source}},
	}
	if authorization != "" {
		req.Headers["authorization"] = authorization
	}
	resp, err := b.api.Handle(context.Background(), req)
	require.NoError(t, err)
	return resp.StatusCode, resp.Headers
}

// Wrong keys in Authorization: Bearer on /admin and /console count
// against their address like the sign-in form's (one record per address):
// past the free attempts the address waits, doubling, and no key from it
// is taken meanwhile, right or wrong; other addresses are not affected, a
// request without the header is no guess, and a right key after the wait
// starts the address over. (The header was checked without limit: guessing
// keys through it was as fast as the API answered.)
func TestBearerKeysCountAgainstTheSignInLimit(t *testing.T) {
	t.Parallel()
	clk := newClock()
	b := setupClocked(t, clk, nil)
	attacker, operator := "203.0.113.9", "198.51.100.7"
	for i := range admin.DefaultSignInFree {
		status, _ := b.adminFrom(t, attacker, "/admin/queues", "Bearer wrong-key-0000001")
		require.Equal(t, http.StatusUnauthorized, status, "attempt %d is checked", i+1)
	}
	status, h := b.adminFrom(t, attacker, "/admin/queues", "Bearer wrong-key-0000001")
	require.Equal(t, http.StatusTooManyRequests, status)
	require.Equal(t, "2", h["Retry-After"])
	status, _ = b.adminFrom(t, attacker, "/admin/queues", "Bearer "+key)
	require.Equal(t, http.StatusTooManyRequests, status, "not even a right key while the address waits")
	p := b.consoleFrom(t, attacker, http.MethodGet, "/console", nil, "", key)
	require.Equal(t, http.StatusTooManyRequests, p.Status, "nor on the console")
	p = b.consoleFrom(t, attacker, http.MethodPost, "/console/login", url.Values{"key": {key}}, "", "")
	require.Equal(t, http.StatusTooManyRequests, p.Status, "nor through the sign-in form: one record per address")

	status, _ = b.adminFrom(t, operator, "/admin/queues", "Bearer "+key)
	require.Equal(t, http.StatusOK, status, "another address is not locked out")
	for range 2 * admin.DefaultSignInFree {
		status, _ = b.adminFrom(t, operator, "/admin/queues", "")
		require.Equal(t, http.StatusUnauthorized, status)
	}
	status, _ = b.adminFrom(t, operator, "/admin/queues", "Bearer "+key)
	require.Equal(t, http.StatusOK, status, "requests without a key are not guesses")

	clk.Add(2 * time.Second)
	status, _ = b.adminFrom(t, attacker, "/admin/queues", "Bearer "+key)
	require.Equal(t, http.StatusOK, status, "a right key after the wait")
	for i := range admin.DefaultSignInFree {
		p := b.consoleFrom(t, attacker, http.MethodGet, "/console", nil, "", "wrong-key-0000002")
		require.NotEqual(t, http.StatusTooManyRequests, p.Status, "started over: attempt %d on the console is checked", i+1)
		require.NotEqual(t, http.StatusOK, p.Status)
	}
	status, h = b.adminFrom(t, attacker, "/admin/queues", "Bearer wrong-key-0000001")
	require.Equal(t, http.StatusTooManyRequests, status, "the console's wrong keys counted")
	require.Equal(t, "2", h["Retry-After"], "and the wait starts over")
}
