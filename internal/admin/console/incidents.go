package console

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/siteswarm/eventplatform/internal/admin"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/replay"
)

// incidents lists incidents by the JSON API's filter (open by default).
func (c *Console) incidents(w http.ResponseWriter, r *http.Request, p page) {
	p.Title, p.Nav = "Incidents", "incidents"
	q := r.URL.Query()
	if q.Get("status") == "" && !q.Has("status") {
		q.Set("status", string(incident.StatusOpen))
	}
	f, err := admin.IncidentFilter(q, c.d.Now())
	if err == nil {
		err = f.Validate()
	}
	data := map[string]any{"Q": q, "Statuses": []incident.Status{incident.StatusOpen, incident.StatusRetrying, incident.StatusTriaged, incident.StatusIgnored, incident.StatusResolved}}
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		p.Error = err.Error()
	} else {
		pg, err := c.d.Incidents.List(r.Context(), f)
		if err != nil {
			w.WriteHeader(listStatus(err))
			p.Error = "list: " + err.Error()
		}
		data["Page"], data["Pager"] = pg, pagerOf("/incidents", q, pg.Cursor, pg.Prev)
	}
	data["Filter"] = filterQuery(q)
	// A bulk replay selects by the same filter; an event's incidents are
	// replayed one by one from their pages.
	data["Bulk"] = q.Get("event") == ""
	p.Data = data
	c.render(w, "incidents", p)
}

// filterQuery is the listing filter without paging, as hidden fields.
func filterQuery(q url.Values) map[string]string {
	out := map[string]string{}
	for _, k := range []string{"status", "tenant", "topic", "errorCode", "type", "since", "until"} {
		if v := q.Get(k); v != "" {
			out[k] = v
		}
	}
	return out
}

// bulk replays the incidents a filter selects: a dry run counts them, and
// the replay runs only when the confirmation names the count it saw.
func (c *Console) bulk(w http.ResponseWriter, r *http.Request, p page) {
	p.Title, p.Nav = "Bulk replay", "incidents"
	f := r.PostForm
	if f.Get("status") == admin.StatusAny {
		f.Del("status") // a bulk replay selects open incidents unless told otherwise
	}
	req := replay.Request{Status: incident.Status(f.Get("status")), TenantID: f.Get("tenant"), Topic: f.Get("topic"),
		ErrorCode: f.Get("errorCode"), Type: f.Get("type"), Since: f.Get("since"), Until: f.Get("until"), Actor: "console", Note: f.Get("note")}
	if req.Status == "any" {
		req.Status = ""
	}
	if req.TenantID == "" && req.Topic == "" {
		w.WriteHeader(http.StatusBadRequest)
		p.Error = "Bulk replay needs a tenant or a topic filter."
		p.Data = map[string]any{"Filter": filterQuery(f)}
		c.render(w, "bulk", p)
		return
	}
	data := map[string]any{"Filter": filterQuery(f)}
	confirm := f.Get("confirm")
	req.DryRun = confirm == ""
	sum, err := c.d.Replayer.Replay(r.Context(), req)
	switch {
	case err != nil:
		w.WriteHeader(http.StatusBadRequest)
		p.Error = err.Error()
	case !req.DryRun && confirm != strconv.Itoa(sum.Selected):
		// The selection changed since the dry run: show it again.
		p.Error = fmt.Sprintf("The selection now holds %d incidents, not %s: check again before replaying.", sum.Selected, confirm)
		req.DryRun = true
		sum, _ = c.d.Replayer.Replay(r.Context(), req)
	}
	data["Summary"], data["DryRun"] = sum, req.DryRun
	p.Data = data
	c.render(w, "bulk", p)
}

// incident is one incident with its message.
func (c *Console) incident(w http.ResponseWriter, r *http.Request, p page, id, flash string) {
	p.Title, p.Nav, p.Flash = "Incident "+id, "incidents", flash
	if !incident.ValidID(id) {
		w.WriteHeader(http.StatusBadRequest)
		p.Error = "not an incident id"
		c.render(w, "error", p)
		return
	}
	v, err := c.d.Views.ViewIncident(r.Context(), id)
	if admin.IsNotFound(err) {
		w.WriteHeader(http.StatusNotFound)
		p.Error = "No incident " + id
		c.render(w, "error", p)
		return
	}
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		p.Error = err.Error()
		c.render(w, "error", p)
		return
	}
	p.Data = incidentPage{IncidentView: v,
		CanReplay: slices.Contains(incident.Replayable, v.Status),
		CanTriage: incident.CanMove(v.Status, incident.StatusTriaged),
		CanIgnore: incident.CanMove(v.Status, incident.StatusIgnored)}
	c.render(w, "incident", p)
}

// incidentPage is an incident with the actions its status allows: a
// resolved or ignored incident offers none (a replay of it needs force,
// which the CLI has), a retrying one waits for its replay.
type incidentPage struct {
	operator.IncidentView
	CanReplay, CanTriage, CanIgnore bool
}

// incidentAction replays, triages or ignores an incident, then shows it.
func (c *Console) incidentAction(w http.ResponseWriter, r *http.Request, p page, id, action string) {
	ctx := r.Context()
	note := r.PostFormValue("note")
	var flash string
	switch action {
	case "replay":
		out := c.d.Replayer.ReplayOne(ctx, replay.Request{Actor: "console", Note: note}, id)
		flash = "Replay: " + string(out.Result)
		if out.Reason != "" {
			flash += " (" + out.Reason + ")"
		}
	case "triage", "ignore":
		to := incident.StatusTriaged
		if action == "ignore" {
			to = incident.StatusIgnored
		}
		if _, err := c.d.Views.Transition(ctx, id, to, "console", note); err != nil {
			flash = "Not changed: " + err.Error()
		} else {
			flash = "Marked " + string(to)
		}
	default:
		w.WriteHeader(http.StatusNotFound)
		p.Error = "no action " + action
		c.render(w, "error", p)
		return
	}
	c.incident(w, r, p, id, flash)
}
