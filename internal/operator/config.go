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
	// ListTenant pages a tenant's events, newest first.
	ListTenant(ctx context.Context, q TenantQuery) ([]ledger.Record, string, error)
}

// TenantQuery pages a tenant's events: created in [Since, Until) (zero:
// unbounded), Limit a page, after Cursor.
type TenantQuery struct {
	TenantID     string
	Since, Until time.Time
	Limit        int
	Cursor       string
}

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
	Now      func() time.Time
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
