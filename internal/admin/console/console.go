package console

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/siteswarm/eventplatform/internal/admin"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// Prefix is where the console is served (by the admin API's function,
// behind the same key).
const Prefix = admin.ConsolePrefix

// Config tunes the console.
type Config struct {
	// InsecureCookie drops Secure from the session cookie: the local
	// stack serves plain HTTP. Deployed stages keep it.
	InsecureCookie bool
	// SessionTTL is a session's absolute lifetime (5m..24h, default 8h).
	SessionTTL time.Duration
	// SessionIdle ends a session unused this long (1m..SessionTTL,
	// default 1h).
	SessionIdle time.Duration
	// SignIn limits failed sign-ins per source (admin.SignInLimit).
	SignIn admin.SignInLimit
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.SessionTTL == 0 {
		c.SessionTTL = DefaultSessionTTL
	}
	if c.SessionIdle == 0 {
		c.SessionIdle = min(DefaultSessionIdle, c.SessionTTL)
	}
	c.SignIn = c.SignIn.WithDefaults()
	return c
}

// Validate checks the config.
func (c Config) Validate() error {
	var errs []error
	if c.SessionTTL < 5*time.Minute || c.SessionTTL > 24*time.Hour {
		errs = append(errs, fmt.Errorf("console: session lifetime %s must be 5m..24h", c.SessionTTL))
	}
	if c.SessionIdle < time.Minute || c.SessionIdle > c.SessionTTL {
		errs = append(errs, fmt.Errorf("console: session idle limit %s must be 1m..the session lifetime (%s)", c.SessionIdle, c.SessionTTL))
	}
	return errors.Join(append(errs, c.SignIn.Validate())...)
}

// touchEvery is how stale a session's recorded activity may get before a
// request records it again: a write every few minutes per active session,
// not one per page, at the cost of that much slack in the idle limit.
func (c Config) touchEvery() time.Duration { return min(5*time.Minute, c.SessionIdle/4) }

// Deps are the admin API's ports the pages read and act through.
type Deps struct {
	Keys admin.Keys
	// Sessions and SignIns are the admin table: sessions server-side (a
	// sign-out ends them everywhere) and each source's failed sign-ins.
	Sessions  admin.Sessions
	SignIns   admin.SignIns
	Views     admin.Views
	Replayer  admin.Replayer
	Incidents admin.Incidents
	Queues    admin.QueueStats
	// Purge serves the purges page (nil: "not configured").
	Purge admin.PurgeViews
	// Jobs serves the jobs pages (nil: "not configured").
	Jobs admin.Jobs
	// Exports lists finished exports' objects and signs their download
	// links (nil: no download).
	Exports operator.Exports
	// Deliveries are the topics' delivery figures of the last hour, for
	// the overview (nil: not shown).
	Deliveries admin.DeliveryStats
	// Retention serves the retention page (nil: "not configured").
	Retention admin.Retention
	// Breakers are the topics' subscriber health: the overview's state
	// column and pause/resume (nil: not shown).
	Breakers admin.Breakers
	Topology topology.Topology
	Now      func() time.Time
	Log      *slog.Logger
}

// Console serves the console's pages.
type Console struct {
	cfg  Config
	d    Deps
	gate *admin.Gate
}

var _ admin.Console = (*Console)(nil)

// New builds the console; it refuses a config or dependencies it cannot
// work with.
func New(cfg Config, d Deps) (*Console, error) {
	cfg = cfg.WithDefaults()
	errs := []error{cfg.Validate()}
	if d.Keys == nil || d.Sessions == nil || d.SignIns == nil || d.Views == nil || d.Replayer == nil || d.Incidents == nil || d.Queues == nil {
		errs = append(errs, errors.New("console: Keys, Sessions, SignIns, Views, Replayer, Incidents and Queues are required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	d.Now, d.Log = clock.Or(d.Now), logging.OrDiscard(d.Log)
	return &Console{cfg: cfg, d: d, gate: &admin.Gate{Limit: cfg.SignIn, Store: d.SignIns, Now: d.Now}}, nil
}

// page is what every page template gets.
type page struct {
	Title string
	Nav   string
	CSRF  string
	Error string
	Flash string
	// Refresh reloads the page every so many seconds (0: never).
	Refresh int
	Data    any
}

// Serve answers a /console… request from API Gateway: it runs the
// console's net/http handler and converts the answer back.
func (c *Console) Serve(ctx context.Context, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		if b, err := base64.StdEncoding.DecodeString(req.Body); err == nil {
			body = b
		}
	}
	target := req.RawPath
	if req.RawQueryString != "" {
		target += "?" + req.RawQueryString
	}
	// A path or query that is not a URL (RawPath "/console/%zz") is the
	// caller's mistake: 400, before anything else runs. (This built its
	// request with net/http/httptest, which panics on one.)
	r, err := http.NewRequestWithContext(ctx, strings.ToUpper(req.RequestContext.HTTP.Method), target, bytes.NewReader(body))
	if err != nil || r.URL.Path == "" {
		return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusBadRequest, Body: "not a console URL\n",
			Headers: map[string]string{"Content-Type": "text/plain; charset=utf-8", "Content-Security-Policy": csp, "Cache-Control": "no-store"}}
	}
	r.RequestURI = target
	// The sign-in limit's source: API Gateway's sourceIp is the TCP peer,
	// which a client cannot set (X-Forwarded-For it can).
	r.RemoteAddr = req.RequestContext.HTTP.SourceIP
	for k, v := range req.Headers {
		r.Header.Set(k, v)
	}
	if len(req.Cookies) > 0 {
		r.Header.Set("Cookie", strings.Join(req.Cookies, "; "))
	}
	w := &response{header: http.Header{}, status: http.StatusOK}
	c.ServeHTTP(w, r)
	resp := events.APIGatewayV2HTTPResponse{StatusCode: w.status, Body: w.body.String(), Headers: map[string]string{}}
	for k, vs := range w.header {
		if k == "Set-Cookie" {
			resp.Cookies = append(resp.Cookies, vs...)
			continue
		}
		resp.Headers[k] = strings.Join(vs, ", ")
	}
	return resp
}

// response collects what the console's handler writes, for the API
// Gateway answer (the role httptest.ResponseRecorder played, without
// linking a test package into the function).
type response struct {
	header      http.Header
	status      int
	wroteHeader bool
	body        bytes.Buffer
}

func (w *response) Header() http.Header { return w.header }

func (w *response) WriteHeader(status int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = status, true
	}
}

func (w *response) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}

// csp allows nothing but this origin's stylesheet and forms: no script at
// all, no third-party origin, no framing.
const csp = "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// ServeHTTP routes a console request to its page: the stylesheet and the
// sign-in are public, everything else needs a session (or a bearer key),
// and a form needs the session's CSRF token.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	path := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, Prefix), "/")
	switch {
	case path == "/console.css":
		css, _ := files.ReadFile("console.css")
		h.Set("Content-Type", "text/css; charset=utf-8")
		_, _ = w.Write(css)
		return
	case path == "/login":
		c.login(w, r)
		return
	}
	s, err := c.authenticate(r.Context(), r)
	var locked *admin.ErrLocked
	if errors.As(err, &locked) {
		c.d.Log.WarnContext(r.Context(), "console: bearer key refused: too many failed sign-ins from this address", "sourceIp", r.RemoteAddr, "retryAfterSeconds", locked.RetryAfter())
		w.Header().Set("Retry-After", strconv.Itoa(locked.RetryAfter()))
		http.Error(w, locked.Error(), http.StatusTooManyRequests)
		return
	}
	if err != nil && !errors.Is(err, errNotSignedIn) {
		c.d.Log.ErrorContext(r.Context(), "console: reading the session failed", "error", err.Error())
		w.WriteHeader(http.StatusServiceUnavailable)
		c.render(w, "error", page{Title: "Unavailable", Error: "Sessions cannot be checked right now; try again in a moment."})
		return
	}
	if err != nil {
		if r.Method == http.MethodGet {
			http.Redirect(w, r, Prefix+"/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		http.Error(w, "not signed in", http.StatusUnauthorized)
		return
	}
	if r.Method == http.MethodPost {
		_ = r.ParseForm()
		if !s.csrfOK(r) {
			http.Error(w, "the form's CSRF token is missing or wrong: reload the page and try again", http.StatusForbidden)
			return
		}
	}
	segs := strings.Split(strings.Trim(path, "/"), "/")
	if path == "" {
		segs = nil
	}
	p := page{CSRF: s.csrf()}
	switch {
	case len(segs) == 0 && r.Method == http.MethodGet:
		c.overview(w, r, p)
	case len(segs) == 1 && segs[0] == "logout" && r.Method == http.MethodPost:
		c.logout(w, r, s)
	case len(segs) == 1 && segs[0] == "incidents" && r.Method == http.MethodGet:
		c.incidents(w, r, p)
	case len(segs) == 2 && segs[0] == "incidents" && segs[1] == "bulk" && r.Method == http.MethodPost:
		c.bulk(w, r, p)
	case len(segs) == 2 && segs[0] == "incidents" && r.Method == http.MethodGet:
		c.incident(w, r, p, segs[1], "")
	case len(segs) == 3 && segs[0] == "incidents" && r.Method == http.MethodPost:
		c.incidentAction(w, r, p, segs[1], segs[2])
	case len(segs) >= 1 && segs[0] == "events" && r.Method == http.MethodGet:
		c.events(w, r, p, segs[1:])
	case len(segs) == 3 && segs[0] == "topics" && r.Method == http.MethodPost:
		c.topicAction(w, r, p, segs[1], segs[2])
	case len(segs) == 1 && segs[0] == "topics" && r.Method == http.MethodPost:
		c.topicsAction(w, r, p)
	case len(segs) == 1 && segs[0] == "purge" && r.Method == http.MethodGet:
		c.purge(w, r, p)
	case len(segs) >= 1 && segs[0] == "jobs":
		c.jobs(w, r, p, segs[1:])
	case len(segs) == 1 && segs[0] == "retention":
		c.retention(w, r, p)
	default:
		w.WriteHeader(http.StatusNotFound)
		p.Title, p.Error = "Not found", "There is no console page "+r.URL.Path
		c.render(w, "error", p)
	}
}
