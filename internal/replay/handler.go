package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/siteswarm/eventplatform/internal/canonjson"
	"github.com/siteswarm/eventplatform/internal/cursor"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/ledger"
)

// Actions of the replay Lambda. The Step Functions state machine uses the
// first three; the CLI and admin tooling use the rest.
const (
	ActionSelect    = "select"
	ActionReplayOne = "replay-one"
	ActionSummarize = "summarize"
	ActionReplay    = "replay"
	ActionList      = "list"
	ActionGet       = "get"
	ActionTriage    = "triage"
	ActionIgnore    = "ignore"
	ActionEvent     = "event"
	ActionEvents    = "events"
)

// Call is the replay Lambda's input: an action and its arguments.
type Call struct {
	Action string `json:"action"`
	// Request is the replay request (select, replay-one, replay; summarize
	// reads its dryRun).
	Request *Request `json:"request,omitempty"`
	// Cursor and PageSize page select.
	Cursor   string `json:"cursor,omitempty"`
	PageSize int    `json:"pageSize,omitempty"`
	// IncidentID names the incident of replay-one, get, triage and ignore.
	IncidentID string `json:"incidentId,omitempty"`
	// Results, Totals and Selected feed summarize: one page of replay-one
	// outcomes, the totals so far (null at first), the selected count.
	Results  []Outcome `json:"results,omitempty"`
	Totals   *Summary  `json:"totals,omitempty"`
	Selected int       `json:"selected,omitempty"`
	// Query filters list (incidents) and events (a tenant's events).
	Query *Query `json:"query,omitempty"`
	// EventID names the event of event (with TenantID for an internal
	// producer's event); Payload includes its payload.
	EventID  string `json:"eventId,omitempty"`
	TenantID string `json:"tenantId,omitempty"`
	Payload  bool   `json:"payload,omitempty"`
	// RequestToken, when set, is the request's token (Request.Token): the
	// state machine passes its execution id to every replay-one, so a
	// retried step is the same request.
	RequestToken string `json:"requestToken,omitempty"`
	// Actor and Note are recorded by triage and ignore.
	Actor string `json:"actor,omitempty"`
	Note  string `json:"note,omitempty"`
}

// Query is a listing filter; Since and Until take RFC 3339 or an age
// ("24h", "7d").
type Query struct {
	Status   incident.Status `json:"status,omitempty"`
	TenantID string          `json:"tenantId,omitempty"`
	Topic    string          `json:"topic,omitempty"`
	Since    string          `json:"since,omitempty"`
	Until    string          `json:"until,omitempty"`
	Limit    int             `json:"limit,omitempty"`
	Cursor   string          `json:"cursor,omitempty"`
}

// Refusal is the replay Lambda's answer to a call it cannot serve: bad
// input or an unknown incident or event. It is an answer, never a function
// error (those are infrastructure failures the caller retries); the state
// machine fails its execution with the code, the CLI prints it.
type Refusal struct {
	Error *RequestError `json:"error"`
}

// Handle is the replay Lambda's handler. Bad input is a Refusal with a
// machine-readable code, never a function error and never a partial
// write.
func (s *Service) Handle(ctx context.Context, raw json.RawMessage) (any, error) {
	c, err := decodeCall(raw)
	if err == nil {
		var out any
		if out, err = s.Do(ctx, c); err == nil {
			return out, nil
		}
	}
	var re *RequestError
	switch {
	case errors.Is(err, cursor.ErrInvalid):
		return Refusal{Error: &RequestError{Code: CodeInvalidRequest, Message: "the cursor is not one this function returned"}}, nil
	case errors.As(err, &re):
		return Refusal{Error: re}, nil
	case errors.Is(err, incident.ErrNotFound) || errors.Is(err, ledger.ErrNotFound):
		return Refusal{Error: &RequestError{Code: CodeNotFound, Message: err.Error()}}, nil
	}
	return nil, err
}

// CodeNotFound: the call names an incident or event that does not exist.
const CodeNotFound = "not_found"

// decodeCall reads a call strictly: one JSON object, no duplicate or
// unknown members.
func decodeCall(raw []byte) (Call, error) {
	var c Call
	if err := canonjson.Check(raw, 32); err != nil {
		return c, badRequest("input is not a replay call: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, badRequest("input is not a replay call: %v", err)
	}
	return c, nil
}

// Do performs one call.
func (s *Service) Do(ctx context.Context, c Call) (any, error) {
	req := func() Request {
		if c.Request == nil {
			return Request{}
		}
		return *c.Request
	}
	switch c.Action {
	case ActionSelect:
		return s.Select(ctx, req(), c.Cursor, c.PageSize)
	case ActionReplayOne:
		if !incident.ValidID(c.IncidentID) {
			return nil, badRequest("replay-one needs a well-formed incidentId")
		}
		r := req()
		if c.RequestToken != "" {
			r.Token = c.RequestToken
		}
		if _, err := r.validateOptions(); err != nil {
			return nil, err
		}
		return s.ReplayOne(ctx, r, c.IncidentID), nil
	case ActionSummarize:
		return Summarize(c.Totals, c.Selected, c.Results, req().DryRun), nil
	case ActionReplay:
		return s.Replay(ctx, req())
	case ActionList:
		q := Query{}
		if c.Query != nil {
			q = *c.Query
		}
		f, err := s.filter(q)
		if err != nil {
			return nil, err
		}
		return s.Incidents.List(ctx, f)
	case ActionGet:
		return s.ViewIncident(ctx, c.IncidentID)
	case ActionTriage:
		return s.Transition(ctx, c.IncidentID, incident.StatusTriaged, c.Actor, c.Note)
	case ActionIgnore:
		return s.Transition(ctx, c.IncidentID, incident.StatusIgnored, c.Actor, c.Note)
	case ActionEvent:
		if c.EventID == "" {
			return nil, badRequest("event needs an eventId")
		}
		return s.ViewEvent(ctx, EventQuery{TenantID: c.TenantID, EventID: c.EventID, Payload: c.Payload})
	case ActionEvents:
		if c.Query == nil {
			return nil, badRequest("events needs a query with a tenantId")
		}
		since, err := ParseWhen(c.Query.Since, s.now())
		if err != nil {
			return nil, badRequest("since: %v", err)
		}
		until, err := ParseWhen(c.Query.Until, s.now())
		if err != nil {
			return nil, badRequest("until: %v", err)
		}
		return s.ListEvents(ctx, c.Query.TenantID, since, until, c.Query.Limit, c.Query.Cursor)
	case "":
		return nil, badRequest("action is required")
	}
	return nil, badRequest("unknown action %q", c.Action)
}

func (s *Service) filter(q Query) (incident.Filter, error) {
	f := incident.Filter{Status: q.Status, TenantID: q.TenantID, Topic: q.Topic, Limit: q.Limit, Cursor: q.Cursor}
	var err error
	if f.Since, err = ParseWhen(q.Since, s.now()); err != nil {
		return f, badRequest("since: %v", err)
	}
	if f.Until, err = ParseWhen(q.Until, s.now()); err != nil {
		return f, badRequest("until: %v", err)
	}
	if err := f.Validate(); err != nil {
		return f, badRequest("%v", err)
	}
	return f, nil
}
