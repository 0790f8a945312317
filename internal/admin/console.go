package admin

import (
	"bytes"
	"context"
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/replay"
)

// ConsolePrefix is where the operations console is served (by the admin
// API's function, behind the same key).
const ConsolePrefix = "/console"

//go:embed console/*.html console/*.css
var consoleFiles embed.FS

var consoleTemplates = template.Must(template.New("console").Funcs(template.FuncMap{
	"ts": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"pretty": func(raw []byte) string {
		var buf bytes.Buffer
		if json.Indent(&buf, raw, "", "  ") != nil {
			return string(raw)
		}
		return buf.String()
	},
	"large": func(raw []byte) bool { return len(raw) > 4<<10 },
	"q":     url.QueryEscape,
}).ParseFS(consoleFiles, "console/*.html"))

// consolePage is what every page template gets.
type consolePage struct {
	Title string
	Nav   string
	CSRF  string
	Error string
	Flash string
	Data  any
}

// console serves /console… from an API Gateway request: it runs the
// console's net/http handler and converts the answer back.
func (a *API) console(ctx context.Context, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
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
	r := httptest.NewRequest(strings.ToUpper(req.RequestContext.HTTP.Method), target, bytes.NewReader(body)).WithContext(ctx)
	for k, v := range req.Headers {
		r.Header.Set(k, v)
	}
	if len(req.Cookies) > 0 {
		r.Header.Set("Cookie", strings.Join(req.Cookies, "; "))
	}
	w := httptest.NewRecorder()
	a.serveConsole(w, r)
	res := w.Result()
	out, _ := io.ReadAll(res.Body)
	resp := events.APIGatewayV2HTTPResponse{StatusCode: res.StatusCode, Body: string(out), Headers: map[string]string{}}
	for k, vs := range res.Header {
		if k == "Set-Cookie" {
			resp.Cookies = append(resp.Cookies, vs...)
			continue
		}
		resp.Headers[k] = strings.Join(vs, ", ")
	}
	return resp
}

// consoleCSP allows nothing but this origin's stylesheet and forms: no
// script at all, no third-party origin, no framing.
const consoleCSP = "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

func (a *API) serveConsole(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", consoleCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	path := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, ConsolePrefix), "/")
	switch {
	case path == "/console.css":
		css, _ := consoleFiles.ReadFile("console/console.css")
		h.Set("Content-Type", "text/css; charset=utf-8")
		_, _ = w.Write(css)
		return
	case path == "/login":
		a.consoleLogin(w, r)
		return
	}
	s, ok := a.consoleSession(r.Context(), r)
	if !ok {
		if r.Method == http.MethodGet {
			http.Redirect(w, r, ConsolePrefix+"/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
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
	page := consolePage{CSRF: s.csrf()}
	switch {
	case len(segs) == 0 && r.Method == http.MethodGet:
		a.consoleOverview(w, r, page)
	case len(segs) == 1 && segs[0] == "logout" && r.Method == http.MethodPost:
		http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: ConsolePrefix, MaxAge: -1, HttpOnly: true, Secure: !a.cfg.ConsoleInsecureCookie, SameSite: http.SameSiteStrictMode})
		http.Redirect(w, r, ConsolePrefix+"/login", http.StatusSeeOther)
	case len(segs) == 1 && segs[0] == "incidents" && r.Method == http.MethodGet:
		a.consoleIncidents(w, r, page)
	case len(segs) == 2 && segs[0] == "incidents" && segs[1] == "bulk" && r.Method == http.MethodPost:
		a.consoleBulk(w, r, page)
	case len(segs) == 2 && segs[0] == "incidents" && r.Method == http.MethodGet:
		a.consoleIncident(w, r, page, segs[1], "")
	case len(segs) == 3 && segs[0] == "incidents" && r.Method == http.MethodPost:
		a.consoleIncidentAction(w, r, page, segs[1], segs[2])
	case len(segs) >= 1 && segs[0] == "events" && r.Method == http.MethodGet:
		a.consoleEvents(w, r, page, segs[1:])
	case len(segs) == 1 && segs[0] == "purge" && r.Method == http.MethodGet:
		a.consolePurge(w, r, page)
	case len(segs) >= 1 && segs[0] == "jobs":
		a.consoleJobs(w, r, page, segs[1:])
	default:
		w.WriteHeader(http.StatusNotFound)
		page.Title, page.Error = "Not found", "There is no console page "+r.URL.Path
		a.render(w, "error", page)
	}
}

func (a *API) render(w http.ResponseWriter, name string, p consolePage) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := consoleTemplates.ExecuteTemplate(w, name, p); err != nil {
		a.d.Log.Error("admin: console template", "template", name, "error", err)
	}
}

func (a *API) consoleLogin(w http.ResponseWriter, r *http.Request) {
	next := r.FormValue("next")
	if !strings.HasPrefix(next, ConsolePrefix) || strings.HasPrefix(next, "//") {
		next = ConsolePrefix
	}
	page := consolePage{Title: "Sign in", Data: map[string]string{"Next": next}}
	if r.Method == http.MethodPost {
		key := strings.TrimSpace(r.PostFormValue("key"))
		if key != "" && a.authorized(r.Context(), "Bearer "+key) {
			http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: newSession(key, a.d.Now()), Path: ConsolePrefix,
				MaxAge: int(sessionTTL.Seconds()), HttpOnly: true, Secure: !a.cfg.ConsoleInsecureCookie, SameSite: http.SameSiteStrictMode})
			http.Redirect(w, r, next, http.StatusSeeOther)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		page.Error = "That is not an active admin key."
	}
	a.render(w, "login", page)
}

// topicHealth is one row of the overview.
type topicHealth struct {
	QueueDepth
	Consumer  string
	Open      int
	OpenMore  bool
	Unhealthy bool
}

// hourBar is one hour of the incidents chart.
type hourBar struct {
	X, H   int
	Y      int
	Tip    string
	Marker bool
}

func (a *API) consoleOverview(w http.ResponseWriter, r *http.Request, p consolePage) {
	ctx := r.Context()
	p.Title, p.Nav = "Overview", "overview"
	data := map[string]any{}
	var topics []topicHealth
	if depths, err := a.d.Queues.Depths(ctx); err != nil {
		p.Error = "queue depths: " + err.Error()
	} else {
		for _, d := range depths {
			th := topicHealth{QueueDepth: d}
			if tp, ok := a.d.Topology.Topic(d.Topic); ok {
				th.Consumer = string(tp.Consumer)
			}
			page, err := a.d.Incidents.List(ctx, incident.Filter{Status: incident.StatusOpen, Topic: d.Topic, Limit: 100})
			if err == nil {
				th.Open, th.OpenMore = len(page.Incidents), page.Cursor != ""
			}
			th.Unhealthy = th.Open > 0 || th.DeadLetters > 0
			topics = append(topics, th)
		}
	}
	sort.SliceStable(topics, func(i, j int) bool {
		if topics[i].Unhealthy != topics[j].Unhealthy {
			return topics[i].Unhealthy
		}
		return topics[i].Open+topics[i].DeadLetters > topics[j].Open+topics[j].DeadLetters
	})
	data["Topics"] = topics

	// Incidents opened per hour, last 48 hours.
	now := a.d.Now().UTC().Truncate(time.Hour)
	since := now.Add(-47 * time.Hour)
	counts := map[time.Time]int{}
	cursor := ""
	for range 10 {
		page, err := a.d.Incidents.List(ctx, incident.Filter{Since: since, Limit: 100, Cursor: cursor})
		if err != nil {
			break
		}
		for _, inc := range page.Incidents {
			counts[inc.CreatedAt.UTC().Truncate(time.Hour)]++
		}
		if cursor = page.Cursor; cursor == "" {
			break
		}
	}
	peak := 1
	for _, c := range counts {
		peak = max(peak, c)
	}
	var bars []hourBar
	total := 0
	for i := range 48 {
		h := since.Add(time.Duration(i) * time.Hour)
		c := counts[h]
		total += c
		height := c * 80 / peak
		bars = append(bars, hourBar{X: i * 10, H: height, Y: 90 - height, Tip: fmt.Sprintf("%s: %d", h.Format("Jan 2 15:00"), c), Marker: h.Hour() == 0})
	}
	data["Bars"], data["IncidentsTotal"], data["Peak"] = bars, total, peak

	if a.d.Purge != nil {
		if days, err := a.d.Purge.Daily(ctx, a.d.Purge.Today()); err == nil {
			data["PurgeToday"] = days
		}
		if dls, err := a.d.Purge.RecentDeadLetters(ctx, 100); err == nil {
			data["PurgeDeadLetters"] = len(dls)
		}
	}
	if a.d.Jobs != nil {
		data["Jobs"] = a.jobCounts(ctx)
	}
	p.Data = data
	a.render(w, "overview", p)
}

// jobCount is how many jobs of a kind are in a status.
type jobCount struct {
	Kind, Status string
	Count        int
	More         bool
}

func (a *API) jobCounts(ctx context.Context) []jobCount {
	var out []jobCount
	for _, kind := range jobKinds(a.d.Jobs) {
		for _, st := range []jobs.Status{jobs.StatusFailed, jobs.StatusRunning, jobs.StatusQueued, jobs.StatusWaiting} {
			page, err := a.d.Jobs.List(ctx, jobs.ListParams{Kind: kind, Status: st, Limit: 100})
			if err != nil || len(page.Jobs) == 0 {
				continue
			}
			out = append(out, jobCount{Kind: kind, Status: string(st), Count: len(page.Jobs), More: page.Cursor != ""})
		}
	}
	return out
}

// jobKinds lists the engine's kinds when it says (it does: *jobs.Engine).
func jobKinds(j Jobs) []string {
	if k, ok := j.(interface{ Kinds() []string }); ok {
		return k.Kinds()
	}
	return nil
}

func (a *API) consoleIncidents(w http.ResponseWriter, r *http.Request, p consolePage) {
	p.Title, p.Nav = "Incidents", "incidents"
	q := r.URL.Query()
	if q.Get("status") == "" && !q.Has("status") {
		q.Set("status", string(incident.StatusOpen))
	}
	f, err := a.filterFrom(q)
	if err == nil {
		err = f.Validate()
	}
	data := map[string]any{"Q": q, "Statuses": []incident.Status{incident.StatusOpen, incident.StatusRetrying, incident.StatusTriaged, incident.StatusIgnored, incident.StatusResolved}}
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		p.Error = err.Error()
	} else {
		page, err := a.d.Incidents.List(r.Context(), f)
		if err != nil {
			p.Error = "list: " + err.Error()
		}
		data["Page"] = page
		if page.Cursor != "" {
			nq := url.Values{}
			for k, v := range q {
				nq[k] = v
			}
			nq.Set("cursor", page.Cursor)
			data["Next"] = ConsolePrefix + "/incidents?" + nq.Encode()
		}
	}
	data["Filter"] = filterQuery(q)
	p.Data = data
	a.render(w, "incidents", p)
}

// filterQuery is the listing filter without paging, as hidden fields.
func filterQuery(q url.Values) map[string]string {
	out := map[string]string{}
	for _, k := range []string{"status", "tenant", "topic", "since", "until"} {
		if v := q.Get(k); v != "" {
			out[k] = v
		}
	}
	return out
}

func (a *API) consoleBulk(w http.ResponseWriter, r *http.Request, p consolePage) {
	p.Title, p.Nav = "Bulk replay", "incidents"
	f := r.PostForm
	req := replay.Request{Status: incident.Status(f.Get("status")), TenantID: f.Get("tenant"), Topic: f.Get("topic"),
		Since: f.Get("since"), Until: f.Get("until"), Actor: "console", Note: f.Get("note")}
	if req.TenantID == "" && req.Topic == "" {
		w.WriteHeader(http.StatusBadRequest)
		p.Error = "Bulk replay needs a tenant or a topic filter."
		p.Data = map[string]any{"Filter": filterQuery(f)}
		a.render(w, "bulk", p)
		return
	}
	data := map[string]any{"Filter": filterQuery(f)}
	confirm := f.Get("confirm")
	req.DryRun = confirm == ""
	sum, err := a.d.Replayer.Replay(r.Context(), req)
	switch {
	case err != nil:
		w.WriteHeader(http.StatusBadRequest)
		p.Error = err.Error()
	case !req.DryRun && confirm != strconv.Itoa(sum.Selected):
		// The selection changed since the dry run: show it again.
		p.Error = fmt.Sprintf("The selection now holds %d incidents, not %s: check again before replaying.", sum.Selected, confirm)
		req.DryRun = true
		sum, _ = a.d.Replayer.Replay(r.Context(), req)
	}
	data["Summary"], data["DryRun"] = sum, req.DryRun
	p.Data = data
	a.render(w, "bulk", p)
}

func (a *API) consoleIncident(w http.ResponseWriter, r *http.Request, p consolePage, id, flash string) {
	p.Title, p.Nav, p.Flash = "Incident "+id, "incidents", flash
	if !incident.ValidID(id) {
		w.WriteHeader(http.StatusBadRequest)
		p.Error = "not an incident id"
		a.render(w, "error", p)
		return
	}
	v, err := a.d.Views.ViewIncident(r.Context(), id)
	if errNotFound(err) {
		w.WriteHeader(http.StatusNotFound)
		p.Error = "No incident " + id
		a.render(w, "error", p)
		return
	}
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		p.Error = err.Error()
		a.render(w, "error", p)
		return
	}
	p.Data = v
	a.render(w, "incident", p)
}

func (a *API) consoleIncidentAction(w http.ResponseWriter, r *http.Request, p consolePage, id, action string) {
	ctx := r.Context()
	note := r.PostFormValue("note")
	var flash string
	switch action {
	case "replay":
		out := a.d.Replayer.ReplayOne(ctx, replay.Request{Actor: "console", Note: note}, id)
		flash = "Replay: " + string(out.Result)
		if out.Reason != "" {
			flash += " (" + out.Reason + ")"
		}
	case "triage", "ignore":
		to := incident.StatusTriaged
		if action == "ignore" {
			to = incident.StatusIgnored
		}
		if _, err := a.d.Views.Transition(ctx, id, to, "console", note); err != nil {
			flash = "Not changed: " + err.Error()
		} else {
			flash = "Marked " + string(to)
		}
	default:
		w.WriteHeader(http.StatusNotFound)
		p.Error = "no action " + action
		a.render(w, "error", p)
		return
	}
	a.consoleIncident(w, r, p, id, flash)
}

func (a *API) consoleEvents(w http.ResponseWriter, r *http.Request, p consolePage, segs []string) {
	ctx := r.Context()
	p.Title, p.Nav = "Events", "events"
	q := r.URL.Query()
	tenant := q.Get("tenant")
	id := q.Get("id")
	if len(segs) == 1 {
		id = segs[0]
	}
	data := map[string]any{"Tenant": tenant, "ID": id}
	if id != "" {
		v, err := a.d.Views.ViewEvent(ctx, operator.EventQuery{TenantID: tenant, EventID: id, Payload: true})
		switch {
		case errNotFound(err):
			w.WriteHeader(http.StatusNotFound)
			p.Error = "No event " + id + " in the ledger" + map[bool]string{true: " (an internal producer's event needs its tenant)", false: ""}[tenant == ""]
		case err != nil:
			p.Error = err.Error()
		default:
			p.Title = "Event " + id
			data["Event"] = v
		}
	} else if tenant != "" {
		page, err := a.d.Views.ListEvents(ctx, operator.TenantQuery{TenantID: tenant, Limit: 50, Cursor: q.Get("cursor")})
		if err != nil {
			p.Error = err.Error()
		}
		data["Page"] = page
	}
	p.Data = data
	a.render(w, "events", p)
}

func (a *API) consolePurge(w http.ResponseWriter, r *http.Request, p consolePage) {
	ctx := r.Context()
	p.Title, p.Nav = "Cache purges", "purge"
	data := map[string]any{}
	if a.d.Purge == nil {
		p.Error = "The cache purge service is not configured on this stage."
	} else {
		if id := r.URL.Query().Get("job"); id != "" {
			j, err := a.d.Purge.Job(ctx, id)
			if err != nil || j == nil {
				p.Error = "No purge job " + id + " (unknown, or older than 24 hours)"
			}
			data["Job"] = j
		}
		days, err := a.d.Purge.Daily(ctx, a.d.Purge.Today())
		if err != nil {
			p.Error = err.Error()
		}
		dls, _ := a.d.Purge.RecentDeadLetters(ctx, 50)
		data["Today"], data["DeadLetters"] = days, dls
	}
	p.Data = data
	a.render(w, "purge", p)
}

func (a *API) consoleJobs(w http.ResponseWriter, r *http.Request, p consolePage, segs []string) {
	ctx := r.Context()
	p.Title, p.Nav = "Jobs", "jobs"
	if a.d.Jobs == nil {
		p.Error = "The job engine is not configured on this stage."
		a.render(w, "error", p)
		return
	}
	if len(segs) >= 1 {
		id := segs[0]
		if len(segs) == 2 && r.Method == http.MethodPost {
			var err error
			switch segs[1] {
			case "cancel":
				_, err = a.d.Jobs.Cancel(ctx, id)
				p.Flash = "Cancelled"
			case "restart":
				_, err = a.d.Jobs.Restart(ctx, id, jobs.RestartParams{FromScratch: r.PostFormValue("fromScratch") == "on", Note: "console"})
				p.Flash = "Restarted"
			default:
				err = fmt.Errorf("no action %s", segs[1])
			}
			if err != nil {
				p.Flash, p.Error = "", err.Error()
			}
		} else if len(segs) != 1 || r.Method != http.MethodGet {
			w.WriteHeader(http.StatusNotFound)
			p.Error = "no such jobs page"
			a.render(w, "error", p)
			return
		}
		j, err := a.d.Jobs.Get(ctx, id)
		if err != nil {
			w.WriteHeader(http.StatusNotFound)
			p.Error = err.Error()
			a.render(w, "error", p)
			return
		}
		p.Title, p.Data = "Job "+id, viewOf(j)
		a.render(w, "job", p)
		return
	}
	if r.Method != http.MethodGet {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	data := map[string]any{"Q": q, "Kinds": jobKinds(a.d.Jobs)}
	if q.Get("tenant") != "" || q.Get("kind") != "" {
		page, err := a.d.Jobs.List(ctx, jobs.ListParams{TenantID: q.Get("tenant"), Kind: q.Get("kind"), Status: jobs.Status(q.Get("status")), Limit: 50, Cursor: q.Get("cursor")})
		if err != nil {
			p.Error = err.Error()
		}
		var views []jobView
		for _, j := range page.Jobs {
			views = append(views, viewOf(j))
		}
		data["Jobs"] = views
	} else {
		data["Counts"] = a.jobCounts(ctx)
	}
	p.Data = data
	a.render(w, "jobs", p)
}

// isConsole reports whether a path is the console's.
func isConsole(path string) bool {
	return path == ConsolePrefix || strings.HasPrefix(path, ConsolePrefix+"/")
}
