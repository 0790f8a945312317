package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/kit/canonjson"
	"github.com/siteswarm/eventplatform/internal/kit/pagecursor"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/replay"
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
	ActionAttempts  = "attempts"
)

// Call is any action's input as clients (the CLI) build it: an action and
// whichever arguments it takes. The function decodes each action into its
// own input type, strictly.
type Call struct {
	Action       string           `json:"action"`
	Request      *replay.Request  `json:"request,omitempty"`
	Cursor       string           `json:"cursor,omitempty"`
	PageSize     int              `json:"pageSize,omitempty"`
	IncidentID   string           `json:"incidentId,omitempty"`
	Results      []replay.Outcome `json:"results,omitempty"`
	Totals       *replay.Summary  `json:"totals,omitempty"`
	Selected     int              `json:"selected,omitempty"`
	Query        *Query           `json:"query,omitempty"`
	EventID      string           `json:"eventId,omitempty"`
	TenantID     string           `json:"tenantId,omitempty"`
	Payload      bool             `json:"payload,omitempty"`
	RequestToken string           `json:"requestToken,omitempty"`
	Actor        string           `json:"actor,omitempty"`
	Note         string           `json:"note,omitempty"`
	// The jobs.* actions' fields.
	JobID          string          `json:"jobId,omitempty"`
	Kind           string          `json:"kind,omitempty"`
	IdempotencyKey string          `json:"idempotencyKey,omitempty"`
	Args           json.RawMessage `json:"args,omitempty"`
	Status         string          `json:"status,omitempty"`
	Limit          int             `json:"limit,omitempty"`
	FromScratch    bool            `json:"fromScratch,omitempty"`
	// The retention.* actions' fields (days; 0: the platform default).
	EventsDays    int  `json:"eventsDays,omitempty"`
	IncidentsDays int  `json:"incidentsDays,omitempty"`
	ArchivesDays  int  `json:"archivesDays,omitempty"`
	ExportsDays   int  `json:"exportsDays,omitempty"`
	IfVersion     *int `json:"ifVersion,omitempty"`
	// The topics.* actions' topic (and the attempts action's filter).
	Topic string `json:"topic,omitempty"`
	// The attempts action's filters.
	Outcome  string `json:"outcome,omitempty"`
	Delivery string `json:"delivery,omitempty"`
}

// Query is a listing filter; Since and Until take RFC 3339 or an age
// ("24h", "7d"). Incidents take Status, TenantID, Topic, EventID,
// ErrorCode and Type; events TenantID (required), Type, Subject, Customer
// and Status (an event status: EventStatuses).
type Query struct {
	Status    incident.Status `json:"status,omitempty"`
	TenantID  string          `json:"tenantId,omitempty"`
	Topic     string          `json:"topic,omitempty"`
	EventID   string          `json:"eventId,omitempty"`
	ErrorCode string          `json:"errorCode,omitempty"`
	Type      string          `json:"type,omitempty"`
	Subject   string          `json:"subject,omitempty"`
	Customer  string          `json:"customer,omitempty"`
	Since     string          `json:"since,omitempty"`
	Until     string          `json:"until,omitempty"`
	Limit     int             `json:"limit,omitempty"`
	Cursor    string          `json:"cursor,omitempty"`
}

// The actions' inputs. Each names the action too (it is in every call).
type (
	action struct {
		Action string `json:"action"`
	}
	// SelectIn pages a request's selection.
	SelectIn struct {
		action
		Request  replay.Request `json:"request"`
		Cursor   string         `json:"cursor"`
		PageSize int            `json:"pageSize"`
	}
	// ReplayOneIn replays one incident; RequestToken (the state machine's
	// execution id) overrides the request's token, so a retried step is
	// the same request.
	ReplayOneIn struct {
		action
		Request      replay.Request `json:"request"`
		IncidentID   string         `json:"incidentId"`
		RequestToken string         `json:"requestToken"`
	}
	// SummarizeIn folds one page of replay-one outcomes into the totals so
	// far (null at first).
	SummarizeIn struct {
		action
		Request  replay.Request   `json:"request"`
		Results  []replay.Outcome `json:"results"`
		Totals   *replay.Summary  `json:"totals"`
		Selected int              `json:"selected"`
	}
	// ReplayIn runs a whole request in-process.
	ReplayIn struct {
		action
		Request replay.Request `json:"request"`
	}
	// ListIn lists incidents.
	ListIn struct {
		action
		Query Query `json:"query"`
	}
	// GetIn views one incident.
	GetIn struct {
		action
		IncidentID string `json:"incidentId"`
	}
	// TransitionIn triages or ignores one incident.
	TransitionIn struct {
		action
		IncidentID string `json:"incidentId"`
		Actor      string `json:"actor"`
		Note       string `json:"note"`
	}
	// EventIn views one event (TenantID for an internal producer's event).
	EventIn struct {
		action
		EventID  string `json:"eventId"`
		TenantID string `json:"tenantId"`
		Payload  bool   `json:"payload"`
	}
	// EventsIn lists a tenant's events.
	EventsIn struct {
		action
		Query Query `json:"query"`
	}
	// AttemptsIn lists an event's delivery attempts (TenantID for an
	// internal producer's event), filtered.
	AttemptsIn struct {
		action
		EventID  string `json:"eventId"`
		TenantID string `json:"tenantId"`
		Topic    string `json:"topic"`
		Outcome  string `json:"outcome"`
		Delivery string `json:"delivery"`
	}
)

// Function is the replay Lambda's handler: the replay engine's steps and
// the operator views, one typed handler per action.
type Function struct {
	Replay *replay.Service
	Views  *Views
	routes map[string]func(context.Context, []byte) (any, error)
}

// NewFunction builds the handler; with a job engine (not nil) it serves
// the jobs.* actions too.
func NewFunction(r *replay.Service, v *Views, j Jobs) *Function {
	f := &Function{Replay: r, Views: v}
	f.routes = map[string]func(context.Context, []byte) (any, error){
		ActionSelect:    typed(f.selectPage),
		ActionReplayOne: typed(f.replayOne),
		ActionSummarize: typed(f.summarize),
		ActionReplay:    typed(f.replay),
		ActionList:      typed(f.list),
		ActionGet:       typed(f.get),
		ActionTriage:    typed(f.transitionTo(incident.StatusTriaged)),
		ActionIgnore:    typed(f.transitionTo(incident.StatusIgnored)),
		ActionEvent:     typed(f.event),
		ActionEvents:    typed(f.events),
		ActionAttempts:  typed(f.attempts),
	}
	if j != nil {
		f.jobRoutes(j)
	}
	return f
}

// typed decodes an action's input strictly (one JSON object, no duplicate
// or unknown members) and calls its handler.
func typed[In, Out any](fn func(context.Context, In) (Out, error)) func(context.Context, []byte) (any, error) {
	return func(ctx context.Context, raw []byte) (any, error) {
		var in In
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			return nil, replay.BadRequest("input does not fit the action: %v", err)
		}
		return fn(ctx, in)
	}
}

// Refusal is the replay Lambda's answer to a call it cannot serve: bad
// input or an unknown incident or event. It is an answer, never a function
// error (those are infrastructure failures the caller retries); the state
// machine fails its execution with the code, the CLI prints it.
type Refusal struct {
	Error *replay.RequestError `json:"error"`
}

// RefusalOf reads an answer of the function as a refusal: a JSON object
// whose only member is "error". An answer may carry an error of its own
// beside its other members (a failed job's view), and that is an answer to
// show, not a refusal of the call. Nil when the answer is not a refusal.
func RefusalOf(answer []byte) *replay.RequestError {
	var members map[string]json.RawMessage
	if json.Unmarshal(answer, &members) != nil || len(members) != 1 {
		return nil
	}
	raw, ok := members["error"]
	if !ok {
		return nil
	}
	var re replay.RequestError
	if json.Unmarshal(raw, &re) != nil || re.Code == "" {
		return nil
	}
	return &re
}

// CodeNotFound: the call names an incident or event that does not exist.
const CodeNotFound = "not_found"

// Handle is the Lambda handler. Bad input is a Refusal with a
// machine-readable code, never a function error and never a partial
// write.
func (f *Function) Handle(ctx context.Context, raw json.RawMessage) (any, error) {
	out, err := f.do(ctx, raw)
	if err == nil {
		return out, nil
	}
	var re *replay.RequestError
	switch {
	case errors.Is(err, pagecursor.ErrInvalid):
		return Refusal{Error: &replay.RequestError{Code: replay.CodeInvalidRequest, Message: "the cursor is not one this function returned"}}, nil
	case errors.As(err, &re):
		return Refusal{Error: re}, nil
	case errors.Is(err, incident.ErrNotFound) || errors.Is(err, ledger.ErrNotFound):
		return Refusal{Error: &replay.RequestError{Code: CodeNotFound, Message: err.Error()}}, nil
	}
	return nil, err
}

func (f *Function) do(ctx context.Context, raw []byte) (any, error) {
	if err := canonjson.Check(raw, 32); err != nil {
		return nil, replay.BadRequest("input is not a replay call: %v", err)
	}
	var a action
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, replay.BadRequest("input is not a replay call: %v", err)
	}
	if a.Action == "" {
		return nil, replay.BadRequest("action is required")
	}
	route, ok := f.routes[a.Action]
	if !ok {
		return nil, replay.BadRequest("unknown action %q", a.Action)
	}
	return route(ctx, raw)
}

func (f *Function) selectPage(ctx context.Context, in SelectIn) (replay.SelectPage, error) {
	return f.Replay.Select(ctx, in.Request, in.Cursor, in.PageSize)
}

func (f *Function) replayOne(ctx context.Context, in ReplayOneIn) (replay.Outcome, error) {
	if !incident.ValidID(in.IncidentID) {
		return replay.Outcome{}, replay.BadRequest("replay-one needs a well-formed incidentId")
	}
	r := in.Request
	if in.RequestToken != "" {
		r.Token = in.RequestToken
	}
	if err := r.ValidateOptions(); err != nil {
		return replay.Outcome{}, err
	}
	return f.Replay.ReplayOne(ctx, r, in.IncidentID), nil
}

func (f *Function) summarize(_ context.Context, in SummarizeIn) (replay.Summary, error) {
	return replay.Summarize(in.Totals, in.Selected, in.Results, in.Request.DryRun), nil
}

func (f *Function) replay(ctx context.Context, in ReplayIn) (replay.Summary, error) {
	return f.Replay.Replay(ctx, in.Request)
}

func (f *Function) list(ctx context.Context, in ListIn) (incident.Page, error) {
	return f.Views.ListIncidents(ctx, in.Query)
}

func (f *Function) get(ctx context.Context, in GetIn) (IncidentView, error) {
	return f.Views.ViewIncident(ctx, in.IncidentID)
}

func (f *Function) transitionTo(to incident.Status) func(context.Context, TransitionIn) (incident.Incident, error) {
	return func(ctx context.Context, in TransitionIn) (incident.Incident, error) {
		return f.Views.Transition(ctx, in.IncidentID, to, in.Actor, in.Note)
	}
}

func (f *Function) event(ctx context.Context, in EventIn) (EventView, error) {
	if in.EventID == "" {
		return EventView{}, replay.BadRequest("event needs an eventId")
	}
	return f.Views.ViewEvent(ctx, EventQuery{TenantID: in.TenantID, EventID: in.EventID, Payload: in.Payload})
}

func (f *Function) attempts(ctx context.Context, in AttemptsIn) (AttemptsView, error) {
	if in.EventID == "" {
		return AttemptsView{}, replay.BadRequest("attempts needs an eventId")
	}
	return f.Views.Attempts(ctx, AttemptQuery{EventQuery: EventQuery{TenantID: in.TenantID, EventID: in.EventID}, Topic: in.Topic,
		Outcome: outbox.AttemptOutcome(in.Outcome), Delivery: outbox.Delivery(in.Delivery)})
}

func (f *Function) events(ctx context.Context, in EventsIn) (EventPage, error) {
	since, err := replay.ParseWhen(in.Query.Since, f.Views.d.Now())
	if err != nil {
		return EventPage{}, replay.BadRequest("since: %v", err)
	}
	until, err := replay.ParseWhen(in.Query.Until, f.Views.d.Now())
	if err != nil {
		return EventPage{}, replay.BadRequest("until: %v", err)
	}
	q := in.Query
	if q.Topic != "" || q.EventID != "" || q.ErrorCode != "" {
		return EventPage{}, replay.BadRequest("events are searched by tenant, since, until, type, subject, customer and status")
	}
	return f.Views.ListEvents(ctx, TenantQuery{TenantID: q.TenantID, Since: since, Until: until, Type: q.Type, Subject: q.Subject,
		Customer: q.Customer, Status: string(q.Status), Limit: q.Limit, Cursor: q.Cursor})
}
