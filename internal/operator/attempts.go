package operator

import (
	"context"
	"errors"
	"slices"
	"sort"

	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/replay"
)

// AttemptQuery names an event (as EventQuery does: its tenant for an
// internal producer's event, which is also the tenant check) and filters
// its delivery attempts; empty filters take every attempt.
type AttemptQuery struct {
	EventQuery
	Topic    string                `json:"topic,omitempty"`
	Outcome  outbox.AttemptOutcome `json:"outcome,omitempty"`
	Delivery outbox.Delivery       `json:"delivery,omitempty"`
}

// Outcomes and Deliveries are the filters' values.
var (
	Outcomes   = []outbox.AttemptOutcome{outbox.OutcomeDelivered, outbox.OutcomeFailed, outbox.OutcomeHeld, outbox.OutcomeDeadLettered, outbox.OutcomeLost}
	Deliveries = []outbox.Delivery{outbox.DeliveryOriginal, outbox.DeliveryRetry, outbox.DeliveryReplay, outbox.DeliveryProbe}
)

// Validate refuses a filter value no attempt can have.
func (q AttemptQuery) Validate() error {
	if q.Outcome != "" && !slices.Contains(Outcomes, q.Outcome) {
		return replay.BadRequest("outcome %q: want one of %v", q.Outcome, Outcomes)
	}
	if q.Delivery != "" && !slices.Contains(Deliveries, q.Delivery) {
		return replay.BadRequest("delivery %q: want one of %v", q.Delivery, Deliveries)
	}
	return nil
}

// AttemptView is one delivery attempt with its topic.
type AttemptView struct {
	Topic string `json:"topic"`
	outbox.Attempt
}

// AttemptsView is an event's delivery attempts that match a query, by
// topic (in the event's order) then number.
type AttemptsView struct {
	EventID  string        `json:"eventId"`
	EventKey string        `json:"eventKey"`
	TenantID string        `json:"tenantId"`
	Topics   []string      `json:"topics"`
	Attempts []AttemptView `json:"attempts"`
	// Dropped counts, per topic, the earliest attempts its row no longer
	// keeps (it keeps the latest outbox.KeptAttempts).
	Dropped map[string]int `json:"dropped,omitempty"`
}

// Attempts is an event's delivery attempts, filtered (GET
// /admin/events/{id}/attempts, `evp events attempts`).
func (s *Views) Attempts(ctx context.Context, q AttemptQuery) (AttemptsView, error) {
	if err := q.Validate(); err != nil {
		return AttemptsView{}, err
	}
	rec, rows, err := s.FindEvent(ctx, q.EventQuery)
	if err != nil {
		return AttemptsView{}, err
	}
	if q.Topic != "" && !slices.Contains(rec.Topics, q.Topic) {
		return AttemptsView{}, replay.BadRequest("event %s is not routed to topic %q (its topics: %v)", rec.Event.ID, q.Topic, rec.Topics)
	}
	v := AttemptsView{EventID: rec.Event.ID, EventKey: rec.Key, TenantID: rec.Event.TenantID, Topics: rec.Topics, Attempts: []AttemptView{}}
	order := map[string]int{}
	for i, t := range rec.Topics {
		order[t] = i
	}
	for _, r := range rows {
		if q.Topic != "" && r.Topic != q.Topic {
			continue
		}
		if as := r.DeliveryAttempts; len(as) > 0 && as[0].N > 1 {
			if v.Dropped == nil {
				v.Dropped = map[string]int{}
			}
			v.Dropped[r.Topic] = as[0].N - 1
		}
		for _, a := range r.DeliveryAttempts {
			if (q.Outcome == "" || a.Outcome == q.Outcome) && (q.Delivery == "" || a.Delivery == q.Delivery) {
				v.Attempts = append(v.Attempts, AttemptView{Topic: r.Topic, Attempt: a})
			}
		}
	}
	sort.SliceStable(v.Attempts, func(i, j int) bool {
		a, b := v.Attempts[i], v.Attempts[j]
		if a.Topic != b.Topic {
			return order[a.Topic] < order[b.Topic]
		}
		return a.N < b.N
	})
	return v, nil
}

// incidentAttempts are the delivery attempts of an incident's dispatch
// (none when its event's ledger item expired).
func (s *Views) incidentAttempts(ctx context.Context, inc incident.Incident) ([]outbox.Attempt, error) {
	_, rows, err := s.d.Events.Load(ctx, inc.Key())
	if err != nil {
		if errors.Is(err, ledger.ErrNotFound) {
			return nil, nil
		}
		return nil, err
	}
	for _, r := range rows {
		if r.Topic == inc.Topic {
			return r.DeliveryAttempts, nil
		}
	}
	return nil, nil
}
