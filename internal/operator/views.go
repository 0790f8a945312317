package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/siteswarm/eventplatform/internal/claimcheck"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/replay"
)

// IncidentView is an incident with its message, for `evp dlq view` and the
// admin API.
type IncidentView struct {
	incident.Incident
	// Stuck marks a replay that stayed retrying longer than
	// incident.DefaultStuckAfter (the sweeper reopens it on its next run).
	Stuck bool `json:"stuck,omitempty"`
	// Message is the stored envelope when the body parses (its payload may
	// be a reference to the incident's copy); Payload is the event payload,
	// fetched from S3 when claim-checked. RawBody is an unparseable body.
	Message json.RawMessage `json:"message,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
	RawBody string          `json:"rawBody,omitempty"`
	// BodyError says why the body could not be loaded (S3 unreachable,
	// integrity check failed); the incident itself is still shown.
	BodyError string `json:"bodyError,omitempty"`
	// Attempts are the delivery attempts of the incident's dispatch
	// (its outbox row's), oldest first; none once its event expired.
	Attempts []outbox.Attempt `json:"attempts,omitempty"`
}

// ViewIncident loads an incident and its body (from S3 when external).
func (s *Views) ViewIncident(ctx context.Context, id string) (IncidentView, error) {
	inc, err := s.d.Incidents.Get(ctx, id)
	if err != nil {
		return IncidentView{}, err
	}
	v := IncidentView{Incident: inc, Stuck: inc.Stuck(s.d.Now(), s.cfg.StuckAfter)}
	v.Body.Inline = nil // shown as Message / RawBody instead
	if v.Attempts, err = s.incidentAttempts(ctx, inc); err != nil {
		return IncidentView{}, err
	}
	body, err := s.d.Bodies.Load(ctx, inc.Body)
	switch {
	case err != nil:
		v.BodyError = err.Error()
	case json.Valid(body) && !inc.Raw:
		v.Message = body
		ev, perr := envelope.ParseMessage(body)
		switch {
		case perr != nil:
		case ev.PayloadRef == nil:
			v.Payload = ev.Payload
		case ev.PayloadRef.Size > MaxViewPayload:
			v.BodyError = fmt.Sprintf("payload is %d bytes (s3://%s/%s); not shown", ev.PayloadRef.Size, ev.PayloadRef.Bucket, ev.PayloadRef.Key)
		default:
			data, err := claimcheck.Load(ctx, s.d.Payloads, *ev.PayloadRef)
			if err != nil {
				v.BodyError = err.Error()
			} else {
				v.Payload = data
			}
		}
	default:
		v.RawBody = string(body)
	}
	return v, nil
}

// MaxViewPayload bounds a payload ViewIncident fetches from S3 (the Lambda
// response limit is 6 MB).
const MaxViewPayload = 2 << 20

// Transition applies an operator's status change (triage, ignore).
func (s *Views) Transition(ctx context.Context, id string, to incident.Status, actor, note string) (incident.Incident, error) {
	if actor == "" {
		return incident.Incident{}, replay.BadRequest("actor is required: who is changing the incident")
	}
	if len(note) > incident.MaxNoteLen {
		return incident.Incident{}, replay.BadRequest("note is longer than %d bytes", incident.MaxNoteLen)
	}
	inc, err := incident.Transition(ctx, s.d.Incidents, id, to, actor, note, s.d.Now())
	if errors.Is(err, incident.ErrTransition) {
		return inc, &replay.RequestError{Code: "transition_not_allowed", Message: err.Error()}
	}
	return inc, err
}

// EventView is an event's ledger item and its per-topic dispatch timeline.
type EventView struct {
	EventID string `json:"eventId"`
	// EventKey is the storage key ("<tenant>/<id>" for internal
	// producers' events, the id for provider events).
	EventKey  string    `json:"eventKey"`
	TenantID  string    `json:"tenantId"`
	Type      string    `json:"type"`
	Source    string    `json:"source"`
	Subject   string    `json:"subject,omitempty"`
	Timestamp time.Time `json:"timestamp"`
	CreatedAt time.Time `json:"createdAt"`
	// Status is derived from the dispatch rows (ledger.Summarize).
	Status      string               `json:"status"`
	PayloadHash string               `json:"payloadHash"`
	PayloadSize int                  `json:"payloadSize"`
	PayloadRef  *envelope.PayloadRef `json:"payloadRef,omitempty"`
	Payload     json.RawMessage      `json:"payload,omitempty"`
	Topics      []string             `json:"topics"`
	Dispatches  []DispatchView       `json:"dispatches"`
	ExpiresAt   time.Time            `json:"expiresAt"`
}

// DispatchView is one topic's dispatch.
type DispatchView struct {
	Topic       string            `json:"topic"`
	Status      outbox.Status     `json:"status"`
	Attempts    int               `json:"attempts"`
	MaxAttempts int               `json:"maxAttempts"`
	NextRetryAt time.Time         `json:"nextRetryAt,omitzero"`
	LeaseUntil  time.Time         `json:"leaseUntil,omitzero"`
	LastError   string            `json:"lastError,omitempty"`
	CreatedAt   time.Time         `json:"createdAt"`
	UpdatedAt   time.Time         `json:"updatedAt"`
	Incident    *replay.Brief     `json:"incident,omitempty"`
	History     []incident.Change `json:"history,omitempty"`
	// DeliveryAttempts are the dispatch's delivery attempts, oldest first
	// (the row keeps the latest outbox.KeptAttempts); Attempts counts its
	// sends to the queue.
	DeliveryAttempts []outbox.Attempt `json:"deliveryAttempts,omitempty"`
}

// EventQuery names an event: its id and, for an internal producer's event
// (their ids are scoped by tenant), its tenant.
type EventQuery struct {
	TenantID string
	EventID  string
	// Payload includes the payload in the view.
	Payload bool
}

// FindEvent loads an event's ledger record and rows. With a tenant it
// looks the scoped key up first, then the bare id (a provider's event, or
// one stored before ids were scoped), which must be that tenant's; without
// one only the bare id. Not found is an error wrapping ledger.ErrNotFound.
func (s *Views) FindEvent(ctx context.Context, q EventQuery) (ledger.Record, []outbox.Row, error) {
	var keys []string
	if q.TenantID != "" {
		keys = append(keys, ledger.ScopedKey(q.TenantID, q.EventID))
	}
	keys = append(keys, ledger.LegacyKey(q.EventID))
	for _, key := range keys {
		rec, rows, err := s.d.Events.Load(ctx, key)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			continue
		case err != nil:
			return rec, nil, err
		case q.TenantID != "" && rec.Event.TenantID != q.TenantID:
			// Another tenant's event under the bare id: not this tenant's
			// to see.
			continue
		}
		return rec, rows, nil
	}
	if q.TenantID == "" {
		return ledger.Record{}, nil, fmt.Errorf("event %q: %w (an internal producer's event is found by its tenant and id)", q.EventID, ledger.ErrNotFound)
	}
	return ledger.Record{}, nil, fmt.Errorf("event %q of tenant %q: %w", q.EventID, q.TenantID, ledger.ErrNotFound)
}

// ViewEvent loads an event's ledger item, its rows and the incident of each
// topic that has one (the id is deterministic, so no index is needed).
func (s *Views) ViewEvent(ctx context.Context, q EventQuery) (EventView, error) {
	rec, rows, err := s.FindEvent(ctx, q)
	if err != nil {
		return EventView{}, err
	}
	v := EventView{
		EventID: rec.Event.ID, EventKey: rec.Key, TenantID: rec.Event.TenantID, Type: rec.Event.Type, Source: rec.Event.Source,
		Subject: rec.Event.Subject, Timestamp: rec.Event.Timestamp, CreatedAt: rec.CreatedAt,
		Status: ledger.Summarize(rows), PayloadHash: rec.PayloadHash, PayloadRef: rec.Event.PayloadRef,
		Topics: rec.Topics, Dispatches: []DispatchView{}, ExpiresAt: rec.ExpiresAt,
	}
	v.PayloadSize = len(rec.Event.Payload)
	if rec.Event.PayloadRef != nil {
		v.PayloadSize = rec.Event.PayloadRef.Size
	}
	if q.Payload {
		v.Payload = rec.Event.Payload
	}
	byTopic := map[string]outbox.Row{}
	for _, r := range rows {
		byTopic[r.Topic] = r
	}
	dispatches := make([]DispatchView, len(rec.Topics))
	errs := make([]error, len(rec.Topics))
	var wg sync.WaitGroup
	for i, topic := range rec.Topics {
		wg.Go(func() {
			d := DispatchView{Topic: topic, Status: "missing"}
			if r, ok := byTopic[topic]; ok {
				d = DispatchView{
					Topic: topic, Status: r.Status, Attempts: r.Attempts, MaxAttempts: r.MaxAttempts,
					LastError: r.LastError, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, DeliveryAttempts: r.DeliveryAttempts,
				}
				if r.Status == outbox.StatusPending || r.Status == outbox.StatusFailed {
					d.NextRetryAt = r.NextRetryAt
				}
				if r.Leased(s.d.Now()) {
					d.LeaseUntil = r.LeaseUntil
				}
			}
			inc, err := s.d.Incidents.Get(ctx, incident.ID(rec.Key, topic))
			switch {
			case err == nil:
				d.Incident, d.History = replay.BriefOf(inc), inc.History
			case !errors.Is(err, incident.ErrNotFound):
				errs[i] = err
			}
			dispatches[i] = d
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return EventView{}, err
	}
	v.Dispatches = dispatches
	return v, nil
}

// EventBrief is one event of a tenant listing.
type EventBrief struct {
	EventID string `json:"eventId"`
	Type    string `json:"type"`
	Source  string `json:"source"`
	Subject string `json:"subject,omitempty"`
	// Customer is the entity a provider's payload names (a Stripe
	// customer): the event's ordering key when it is not the subject.
	Customer  string    `json:"customer,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	Topics    []string  `json:"topics"`
	// Status is derived from the dispatch rows.
	Status string `json:"status"`
}

// EventPage is a page of a tenant's events.
type EventPage struct {
	Events []EventBrief `json:"events"`
	// Next and Prev are the cursors of the pages after and before this
	// one (absent when there is none).
	Next string `json:"next,omitempty"`
	Prev string `json:"prev,omitempty"`
}

// Event listing page sizes.
const (
	DefaultEventPage = 20
	MaxEventPage     = 100
)

// ListEvents pages a tenant's events matching q, newest first, each with
// its status.
func (s *Views) ListEvents(ctx context.Context, q TenantQuery) (EventPage, error) {
	if err := q.validate(); err != nil {
		return EventPage{}, err
	}
	if q.Limit <= 0 {
		q.Limit = DefaultEventPage
	}
	found, err := s.d.Events.SearchTenant(ctx, q)
	if err != nil {
		return EventPage{}, err
	}
	page := EventPage{Events: make([]EventBrief, len(found.Events)), Next: found.Next, Prev: found.Prev}
	for i, l := range found.Events {
		rec := l.Record
		b := EventBrief{EventID: rec.Event.ID, Type: rec.Event.Type, Source: rec.Event.Source, Subject: rec.Event.Subject,
			CreatedAt: rec.CreatedAt, Topics: rec.Topics, Status: l.Status}
		if rec.OrderingKey != rec.Event.Subject {
			b.Customer = rec.OrderingKey
		}
		page.Events[i] = b
	}
	return page, nil
}

// validate checks an operator's event search.
func (q TenantQuery) validate() error {
	switch {
	case q.TenantID == "":
		return replay.BadRequest("tenantId is required: events are listed by tenant")
	case !envelope.ValidTenant(q.TenantID):
		return replay.BadRequest("tenant %q is not a tenant id (lowercase letters, digits, _ and -)", q.TenantID)
	case q.Limit < 0 || q.Limit > MaxEventPage:
		return replay.BadRequest("limit %d out of range (1..%d)", q.Limit, MaxEventPage)
	case q.Status != "" && !slices.Contains(EventStatuses, q.Status):
		return replay.BadRequest("status %q: want one of %s", q.Status, strings.Join(EventStatuses, ", "))
	case !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until):
		return replay.BadRequest("since %s must be before until %s", q.Since.Format(time.RFC3339), q.Until.Format(time.RFC3339))
	case len(q.Type) > maxFilterLen || len(q.Subject) > maxFilterLen || len(q.Customer) > maxFilterLen:
		return replay.BadRequest("a type, subject or customer is at most %d bytes", maxFilterLen)
	}
	return nil
}

// maxFilterLen bounds a search term.
const maxFilterLen = 256

// ListIncidents pages incidents by a query's filter.
func (s *Views) ListIncidents(ctx context.Context, q Query) (incident.Page, error) {
	if q.Subject != "" || q.Customer != "" {
		return incident.Page{}, replay.BadRequest("incidents are searched by status, tenant, topic, event, error code, type and time")
	}
	f := incident.Filter{Status: q.Status, TenantID: q.TenantID, Topic: q.Topic, EventID: q.EventID, ErrorCode: q.ErrorCode, Type: q.Type,
		Limit: q.Limit, Cursor: q.Cursor}
	var err error
	if f.Since, err = replay.ParseWhen(q.Since, s.d.Now()); err != nil {
		return incident.Page{}, replay.BadRequest("since: %v", err)
	}
	if f.Until, err = replay.ParseWhen(q.Until, s.d.Now()); err != nil {
		return incident.Page{}, replay.BadRequest("until: %v", err)
	}
	if err := f.Validate(); err != nil {
		return incident.Page{}, replay.BadRequest("%v", err)
	}
	return s.SearchIncidents(ctx, f)
}

// SearchIncidents lists incidents by f. An event's incidents (f.EventID)
// need no index: an incident's id is derived from its event's key and
// topic (incident.ID), so they are read by id, for the event's bare key
// and, with a tenant, its scoped key, on every topic of the topology: one
// page, newest failure first, no cursor. Everything else is the store's
// index-backed listing.
func (s *Views) SearchIncidents(ctx context.Context, f incident.Filter) (incident.Page, error) {
	if f.EventID == "" || len(s.d.Topics) == 0 {
		return s.d.Incidents.List(ctx, f)
	}
	if f.Cursor != "" {
		return incident.Page{}, replay.BadRequest("an event's incidents are one page: no cursor")
	}
	keys := []string{ledger.LegacyKey(f.EventID)}
	if f.TenantID != "" {
		keys = append(keys, ledger.ScopedKey(f.TenantID, f.EventID))
	}
	var ids []string
	for _, k := range keys {
		for _, t := range s.d.Topics {
			ids = append(ids, incident.ID(k, t))
		}
	}
	found := make([]*incident.Incident, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			inc, err := s.d.Incidents.Get(ctx, id)
			switch {
			case errors.Is(err, incident.ErrNotFound):
			case err != nil:
				errs[i] = err
			case f.Matches(inc):
				// As listings carry them: no inline body, no history.
				inc.Body.Inline, inc.History = nil, nil
				found[i] = &inc
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return incident.Page{}, err
	}
	page := incident.Page{Incidents: []incident.Incident{}}
	for _, inc := range found {
		if inc != nil {
			page.Incidents = append(page.Incidents, *inc)
		}
	}
	slices.SortFunc(page.Incidents, func(a, b incident.Incident) int {
		if c := b.LastFailedAt.Compare(a.LastFailedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	page.Incidents = page.Incidents[:min(len(page.Incidents), f.PageSize())]
	return page, nil
}

// IncidentSearch is the views' incident search as a listing port
// (admin.Incidents: the JSON API's and the console's incident lists).
type IncidentSearch struct{ Views *Views }

// List is Views.SearchIncidents.
func (l IncidentSearch) List(ctx context.Context, f incident.Filter) (incident.Page, error) {
	return l.Views.SearchIncidents(ctx, f)
}
