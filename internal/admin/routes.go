package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/siteswarm/eventplatform/internal/kit/pagecursor"
	"github.com/siteswarm/eventplatform/internal/operator"

	"github.com/aws/aws-lambda-go/events"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/replay"
)

// health probes every dependency in parallel: 200 "healthy" when all
// answer, 503 "degraded" (with the failing checks) otherwise, so a monitor
// can alarm on the status code alone.
func (a *API) health(ctx context.Context) events.APIGatewayV2HTTPResponse {
	results := a.probe(ctx, a.d.Checks)
	status, code := "healthy", http.StatusOK
	for _, r := range results {
		if r != "ok" {
			status, code = "degraded", http.StatusServiceUnavailable
		}
	}
	return reply(code, map[string]any{"status": status, "checks": results, "time": a.d.Now().UTC()})
}

// topicView is a topic's configuration next to its live depth.
type topicView struct {
	QueueDepth
	Consumer        string `json:"consumer"`
	FIFO            bool   `json:"fifo"`
	BatchSize       int    `json:"batchSize"`
	MaxReceiveCount int    `json:"maxReceiveCount"`
}

func (a *API) queues(ctx context.Context) events.APIGatewayV2HTTPResponse {
	depths, err := a.d.Queues.Depths(ctx)
	if err != nil {
		a.d.Log.ErrorContext(ctx, "admin: queue depths", "error", err)
		return internalError()
	}
	out := make([]topicView, 0, len(depths))
	for _, d := range depths {
		v := topicView{QueueDepth: d}
		if tp, ok := a.d.Topology.Topic(d.Topic); ok {
			v.Consumer, v.FIFO, v.BatchSize, v.MaxReceiveCount = string(tp.Consumer), tp.FIFO, tp.BatchSize, tp.MaxReceiveCount
		}
		out = append(out, v)
	}
	return reply(http.StatusOK, map[string]any{"topics": out})
}

func (a *API) event(ctx context.Context, id string, q url.Values) events.APIGatewayV2HTTPResponse {
	if !envelope.ValidID(id) {
		return problem(http.StatusBadRequest, "invalid_id", "event ids are 1 to "+strconv.Itoa(envelope.MaxIDLen)+" characters of letters, digits and . _ : -")
	}
	tenant := firstOf(q, "tenant", "tenantId")
	if tenant != "" && !envelope.ValidTenant(tenant) {
		return problem(http.StatusBadRequest, "invalid_tenant", "tenant must be a tenant id (lowercase letters, digits, _ and -)")
	}
	withPayload := q.Get("payload") != "false"
	v, err := a.d.Views.ViewEvent(ctx, operator.EventQuery{TenantID: tenant, EventID: id, Payload: withPayload})
	if IsNotFound(err) {
		msg := fmt.Sprintf("no event %q in the ledger (never accepted, or past its retention)", id)
		if tenant == "" {
			msg += "; an internal producer's event is found with ?tenant=<tenant>"
		}
		return problem(http.StatusNotFound, "event_not_found", msg)
	}
	if err != nil {
		a.d.Log.ErrorContext(ctx, "admin: view event", "eventId", id, "error", err)
		return internalError()
	}
	return reply(http.StatusOK, v)
}

// attempts is an event's delivery attempts: ?tenant= as the event view
// (an internal producer's event is found, and only found, with its
// tenant), filtered by ?topic=, ?outcome= and ?delivery=.
func (a *API) attempts(ctx context.Context, id string, q url.Values) events.APIGatewayV2HTTPResponse {
	if !envelope.ValidID(id) {
		return problem(http.StatusBadRequest, "invalid_id", "event ids are 1 to "+strconv.Itoa(envelope.MaxIDLen)+" characters of letters, digits and . _ : -")
	}
	tenant := firstOf(q, "tenant", "tenantId")
	if tenant != "" && !envelope.ValidTenant(tenant) {
		return problem(http.StatusBadRequest, "invalid_tenant", "tenant must be a tenant id (lowercase letters, digits, _ and -)")
	}
	v, err := a.d.Views.Attempts(ctx, operator.AttemptQuery{EventQuery: operator.EventQuery{TenantID: tenant, EventID: id},
		Topic: q.Get("topic"), Outcome: outbox.AttemptOutcome(q.Get("outcome")), Delivery: outbox.Delivery(q.Get("delivery"))})
	var re *replay.RequestError
	switch {
	case IsNotFound(err):
		msg := fmt.Sprintf("no event %q in the ledger (never accepted, or past its retention)", id)
		if tenant == "" {
			msg += "; an internal producer's event is found with ?tenant=<tenant>"
		}
		return problem(http.StatusNotFound, "event_not_found", msg)
	case errors.As(err, &re):
		return problem(http.StatusBadRequest, "invalid_filter", re.Message)
	case err != nil:
		a.d.Log.ErrorContext(ctx, "admin: event attempts", "eventId", id, "error", err)
		return internalError()
	}
	return reply(http.StatusOK, v)
}

// listEvents pages a tenant's events: GET /admin/events?tenant=…
// (EventFilter), newest first, each with its status; the answer's next
// and prev are the cursors of the pages after and before it.
func (a *API) listEvents(ctx context.Context, q url.Values) events.APIGatewayV2HTTPResponse {
	f, err := EventFilter(q, a.d.Now())
	if err != nil {
		return problem(http.StatusBadRequest, "invalid_filter", err.Error())
	}
	page, err := a.d.Views.ListEvents(ctx, f)
	if err != nil {
		return a.listFailed(ctx, "events", err)
	}
	if page.Events == nil {
		page.Events = []operator.EventBrief{}
	}
	return reply(http.StatusOK, page)
}

// EventFilter reads ?tenant=&since=&until=&type=&subject=&customer=
// &status=&limit=&cursor= (the JSON API's and the console's event
// listings); since and until take RFC 3339 or an age before now.
func EventFilter(q url.Values, now time.Time) (operator.TenantQuery, error) {
	f := operator.TenantQuery{
		TenantID: firstOf(q, "tenant", "tenantId"),
		Type:     q.Get("type"),
		Subject:  q.Get("subject"),
		Customer: q.Get("customer"),
		Status:   q.Get("status"),
		Cursor:   q.Get("cursor"),
	}
	if f.Status == "any" {
		f.Status = ""
	}
	var err error
	f.Since, f.Until, f.Limit, err = windowAndLimit(q, now)
	return f, err
}

func (a *API) listIncidents(ctx context.Context, q url.Values) events.APIGatewayV2HTTPResponse {
	f, err := IncidentFilter(q, a.d.Now())
	if err == nil {
		err = f.Validate()
	}
	if err != nil {
		return problem(http.StatusBadRequest, "invalid_filter", err.Error())
	}
	page, err := a.d.Incidents.List(ctx, f)
	if err != nil {
		return a.listFailed(ctx, "incidents", err)
	}
	if page.Incidents == nil {
		page.Incidents = []incident.Incident{}
	}
	return reply(http.StatusOK, page)
}

// listFailed answers a listing that failed: a cursor this API did not
// issue for the filter (or for another one), a filter the views refuse,
// or the platform (logged).
func (a *API) listFailed(ctx context.Context, what string, err error) events.APIGatewayV2HTTPResponse {
	var re *replay.RequestError
	switch {
	case badCursor(err):
		return problem(http.StatusBadRequest, "invalid_cursor", "the cursor is not one this API returned for this filter")
	case errors.As(err, &re):
		return problem(http.StatusBadRequest, "invalid_filter", re.Message)
	}
	a.d.Log.ErrorContext(ctx, "admin: list "+what, "error", err)
	return internalError()
}

// badCursor recognises a cursor this API did not issue.
func badCursor(err error) bool { return errors.Is(err, pagecursor.ErrInvalid) }

// IncidentFilter reads ?status=&tenant=&topic=&event=&errorCode=&type=
// &since=&until=&limit=&cursor= (the JSON API's and the console's
// incident listings); status "any" (the CLI's spelling) is every status;
// since and until take RFC 3339 or an age ("24h", "7d") before now, as
// the CLI does.
func IncidentFilter(q url.Values, now time.Time) (incident.Filter, error) {
	status := q.Get("status")
	if status == StatusAny {
		status = ""
	}
	f := incident.Filter{
		Status:    incident.Status(status),
		TenantID:  firstOf(q, "tenant", "tenantId"),
		Topic:     q.Get("topic"),
		EventID:   firstOf(q, "event", "eventId"),
		ErrorCode: q.Get("errorCode"),
		Type:      q.Get("type"),
		Cursor:    q.Get("cursor"),
	}
	var err error
	f.Since, f.Until, f.Limit, err = windowAndLimit(q, now)
	return f, err
}

// windowAndLimit reads a listing's ?since=&until= (RFC 3339, or an age
// such as "24h" or "7d" before now) and ?limit= (positive; 0 when absent).
func windowAndLimit(q url.Values, now time.Time) (since, until time.Time, limit int, err error) {
	if since, err = replay.ParseWhen(q.Get("since"), now); err != nil {
		return since, until, 0, fmt.Errorf("since: %w", err)
	}
	if until, err = replay.ParseWhen(q.Get("until"), now); err != nil {
		return since, until, 0, fmt.Errorf("until: %w", err)
	}
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit <= 0 {
			return since, until, 0, fmt.Errorf("limit=%q: want a positive number", v)
		}
	}
	return since, until, limit, nil
}

// StatusAny is a status filter that matches every status, as the CLI
// spells it (`evp dlq list --status any`); an empty status does too.
const StatusAny = "any"

func firstOf(q url.Values, keys ...string) string {
	for _, k := range keys {
		if v := q.Get(k); v != "" {
			return v
		}
	}
	return ""
}

func (a *API) getIncident(ctx context.Context, id string) events.APIGatewayV2HTTPResponse {
	if !incident.ValidID(id) {
		return badIncidentID()
	}
	v, err := a.d.Views.ViewIncident(ctx, id)
	if IsNotFound(err) {
		return problem(http.StatusNotFound, "incident_not_found", fmt.Sprintf("no incident %q", id))
	}
	if err != nil {
		a.d.Log.ErrorContext(ctx, "admin: view incident", "incidentId", id, "error", err)
		return internalError()
	}
	return reply(http.StatusOK, v)
}

func badIncidentID() events.APIGatewayV2HTTPResponse {
	return problem(http.StatusBadRequest, "invalid_id", "incident ids look like inc_ and 32 hex digits")
}

// actionBody is the optional body of replay and transition requests.
type actionBody struct {
	// Status is the transition's target (transition only).
	Status incident.Status `json:"status,omitempty"`
	By     string          `json:"by,omitempty"`
	Note   string          `json:"note,omitempty"`
	Force  bool            `json:"force,omitempty"`
	DryRun bool            `json:"dryRun,omitempty"`
}

func (a *API) actor(in actionBody) string {
	if in.By != "" {
		return in.By
	}
	return DefaultActor
}

// replay replays one incident. A replay that happened (or would, in a dry
// run) is 200; an incident that is not replayable is 409 and a missing one
// 404, each with the outcome so the caller sees the reason.
func (a *API) replay(ctx context.Context, id string, body []byte) events.APIGatewayV2HTTPResponse {
	if !incident.ValidID(id) {
		return badIncidentID()
	}
	var in actionBody
	if err := decodeBody(body, &in); err != nil || in.Status != "" {
		return problem(http.StatusBadRequest, "invalid_body", `want {"force":bool,"dryRun":bool,"by":"…","note":"…"} (all optional)`)
	}
	if len(in.Note) > incident.MaxNoteLen {
		return problem(http.StatusBadRequest, "invalid_body", fmt.Sprintf("note is longer than %d bytes", incident.MaxNoteLen))
	}
	out := a.d.Replayer.ReplayOne(ctx, replay.Request{Force: in.Force, DryRun: in.DryRun, Actor: a.actor(in), Note: in.Note}, id)
	switch {
	case out.Result == replay.ResultReplayed || out.Result == replay.ResultWouldReplay:
		return reply(http.StatusOK, out)
	case out.Result == replay.ResultSkipped && out.Reason == replay.SkipNotFound:
		return reply(http.StatusNotFound, out)
	case out.Result == replay.ResultSkipped:
		return reply(http.StatusConflict, out)
	}
	a.d.Log.ErrorContext(ctx, "admin: replay failed", "incidentId", id, "error", out.Error)
	return reply(http.StatusInternalServerError, out)
}

func (a *API) transition(ctx context.Context, id string, body []byte) events.APIGatewayV2HTTPResponse {
	if !incident.ValidID(id) {
		return badIncidentID()
	}
	var in actionBody
	if err := decodeBody(body, &in); err != nil || in.Force || in.DryRun {
		return problem(http.StatusBadRequest, "invalid_body", `want {"status":"triaged|ignored","by":"…","note":"…"}`)
	}
	switch in.Status {
	case incident.StatusTriaged, incident.StatusIgnored:
	case incident.StatusRetrying:
		return problem(http.StatusBadRequest, "invalid_status", "use POST /admin/incidents/{id}/replay to retry an incident")
	default:
		return problem(http.StatusBadRequest, "invalid_status", fmt.Sprintf("status %q: an operator moves an incident to triaged or ignored", in.Status))
	}
	inc, err := a.d.Views.Transition(ctx, id, in.Status, a.actor(in), in.Note)
	var re *replay.RequestError
	switch {
	case IsNotFound(err):
		return problem(http.StatusNotFound, "incident_not_found", fmt.Sprintf("no incident %q", id))
	case errors.As(err, &re):
		status := http.StatusBadRequest
		if re.Code == "transition_not_allowed" {
			status = http.StatusConflict
		}
		return problem(status, re.Code, re.Message)
	case err != nil:
		a.d.Log.ErrorContext(ctx, "admin: transition", "incidentId", id, "error", err)
		return internalError()
	}
	return reply(http.StatusOK, inc)
}
