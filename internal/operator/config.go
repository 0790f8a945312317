package operator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/siteswarm/eventplatform/internal/claimcheck"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// Events is the Events table as the views read it.
type Events interface {
	// Load returns an event's ledger record and outbox rows by key (an
	// error wrapping ledger.ErrNotFound for an unknown event).
	Load(ctx context.Context, key string) (ledger.Record, []outbox.Row, error)
	// ListTenant pages a tenant's events, newest first (index summaries:
	// no payload).
	ListTenant(ctx context.Context, q TenantQuery) ([]ledger.Record, string, error)
	// SearchTenant pages a tenant's events that match q, newest first,
	// each with its status; a page may be shorter than q.Limit (even
	// empty) and still have a next cursor when the filter spent the
	// page's read budget.
	SearchTenant(ctx context.Context, q TenantQuery) (TenantPage, error)
}

// TenantQuery selects a tenant's events: accepted in [Since, Until) (zero:
// unbounded), of Type, naming Subject (the envelope subject) or Customer
// (a Stripe customer: the event's ordering key), whose derived Status
// (ledger.Summarize, or StatusExpired) is Status ("" matches all); Limit a
// page, after Cursor (a next or a previous page's).
type TenantQuery struct {
	TenantID     string
	Since, Until time.Time
	Type         string
	Subject      string
	Customer     string
	Status       string
	Limit        int
	Cursor       string
}

// TenantPage is a page of a tenant's events with their statuses.
type TenantPage struct {
	Events []Listed
	// Next and Prev continue the listing after and before this page (""
	// when there is nothing that way).
	Next, Prev string
}

// Listed is an event of a listing: its index summary and its status.
type Listed struct {
	Record ledger.Record
	Status string
}

// StatusExpired is the listed status of an event whose rows are gone
// (its ledger item expires with them; the index lags the deletion).
const StatusExpired = "expired"

// EventStatuses are the statuses an event listing shows and filters by:
// ledger.Summarize's, and StatusExpired.
var EventStatuses = []string{ledger.StatusReceived, "enqueued", "completed", "failed", "dlq", StatusExpired}

// Config tunes the views.
type Config struct {
	// StuckAfter is when a retrying incident is shown as stuck.
	StuckAfter time.Duration
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.StuckAfter == 0 {
		c.StuckAfter = incident.DefaultStuckAfter
	}
	return c
}

// Validate checks the config.
func (c Config) Validate() error {
	if c.StuckAfter < time.Minute {
		return fmt.Errorf("operator: stuck-after %s must be at least 1m", c.StuckAfter)
	}
	return nil
}

// Deps are what the views read.
type Deps struct {
	Incidents incident.Store
	Events    Events
	// Bodies loads incident bodies (inline or from S3).
	Bodies *incident.Bodies
	// Payloads fetches claim-checked payloads.
	Payloads claimcheck.Store
	// Topics are the topology's topics: an event's incidents are found
	// by the ids it would have on each (SearchIncidents).
	Topics []string
	Now    func() time.Time
}

// Views are the operator views and actions (New builds them).
type Views struct {
	cfg Config
	d   Deps
}

// New builds the views.
func New(cfg Config, d Deps) (*Views, error) {
	cfg = cfg.WithDefaults()
	errs := []error{cfg.Validate()}
	if d.Incidents == nil || d.Events == nil || d.Bodies == nil || d.Payloads == nil {
		errs = append(errs, errors.New("operator: Incidents, Events, Bodies and Payloads are required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	d.Now = clock.Or(d.Now)
	return &Views{cfg: cfg, d: d}, nil
}
