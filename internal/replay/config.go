package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/siteswarm/eventplatform/internal/claimcheck"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// Config tunes replay.
type Config struct {
	// Retention of a ledger record replay has to recreate (the event's
	// retention ran out); the same retention ingest writes.
	Retention time.Duration
	// Concurrency bounds incidents replayed in parallel by Replay (1..64).
	Concurrency int
}

// DefaultConcurrency is Replay's default parallelism.
const DefaultConcurrency = 8

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.Retention == 0 {
		c.Retention = ledger.DefaultRetention
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	return c
}

// Validate checks the config.
func (c Config) Validate() error {
	var errs []error
	if err := ledger.CheckRetention(c.Retention); err != nil {
		errs = append(errs, fmt.Errorf("replay: %w", err))
	}
	if c.Concurrency < 1 || c.Concurrency > 64 {
		errs = append(errs, fmt.Errorf("replay: concurrency %d must be 1..64", c.Concurrency))
	}
	return errors.Join(errs...)
}

// Deps are what replay talks to.
type Deps struct {
	Incidents incident.Store
	Events    Events
	// Restorer recreates an expired event's ledger item and row (the
	// Events and Incidents tables together: the write checks the
	// incident).
	Restorer Restorer
	// Bodies loads incident bodies (inline or from S3).
	Bodies *incident.Bodies
	// ClaimCheck re-applies the claim-check threshold to replayed payloads,
	// exactly as ingest does, and loads references.
	ClaimCheck claimcheck.Checker
	Sender     outbox.Sender
	Topology   topology.Topology
	Now        func() time.Time
	Log        *slog.Logger
	// TraceHeader returns the trace header to carry into SQS (nil: none).
	TraceHeader func(context.Context) string
	// Jobs restarts failed durable jobs (nil: their incidents are skipped).
	Jobs JobRestarter
}

// New builds a replay service; it refuses a config or dependencies that
// cannot work.
func New(cfg Config, d Deps) (*Service, error) {
	cfg = cfg.WithDefaults()
	errs := []error{cfg.Validate()}
	if d.Incidents == nil || d.Events == nil || d.Restorer == nil || d.Sender == nil || d.Bodies == nil || d.ClaimCheck.Store == nil {
		errs = append(errs, errors.New("replay: Incidents, Events, Restorer, Sender, Bodies and ClaimCheck.Store are required"))
	} else {
		errs = append(errs, d.Bodies.Validate(), d.ClaimCheck.Validate())
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	d.Now, d.Log = clock.Or(d.Now), logging.OrDiscard(d.Log)
	return &Service{cfg: cfg, d: d}, nil
}
