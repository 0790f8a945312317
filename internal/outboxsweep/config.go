package outboxsweep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// Config tunes the sweeper.
type Config struct {
	// Lease is how long a claimed row is held; it must outlast the send and
	// the outcome write of one batch (at least 5s).
	Lease time.Duration
	// PageSize is the sweeper index query page size per partition
	// (1..1000).
	PageSize int
	// BatchSize rows are claimed and sent per round (1..100: one
	// BatchGetItem of their ledger items).
	BatchSize int
	// Concurrency bounds parallel sends (1..100).
	Concurrency int
	// Margin is kept free before the Lambda deadline (at least 1s).
	Margin time.Duration
	// SettleAfter is how long after its consumer lease ended a processing
	// row is settled (its message is gone by then: a retried message comes
	// back within the queue's visibility timeout and the consumer backoff
	// cap, and claims the row again).
	SettleAfter time.Duration
	// StuckAfter is how long a replay may stay retrying before it is
	// reopened.
	StuckAfter time.Duration
	// BackoffBase is the wait after a row's first failed resend; it
	// doubles with every attempt (default 2 minutes: five attempts span
	// about an hour). Tests and reliability runs shorten it.
	BackoffBase time.Duration
}

// Defaults.
const (
	DefaultLease       = 60 * time.Second
	DefaultPageSize    = 100
	DefaultBatchSize   = 50
	DefaultConcurrency = 16
	DefaultMargin      = 10 * time.Second
	DefaultBackoffBase = 2 * time.Minute
	// DefaultBudget is the run budget when the context has no deadline.
	DefaultBudget = time.Minute
	// DefaultSettleAfter exceeds every topic's visibility timeout plus the
	// consumer backoff cap (15 minutes) with room to spare.
	DefaultSettleAfter = 45 * time.Minute
)

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	set := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	seti := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	set(&c.Lease, DefaultLease)
	set(&c.Margin, DefaultMargin)
	set(&c.SettleAfter, DefaultSettleAfter)
	set(&c.StuckAfter, incident.DefaultStuckAfter)
	set(&c.BackoffBase, DefaultBackoffBase)
	seti(&c.PageSize, DefaultPageSize)
	seti(&c.BatchSize, DefaultBatchSize)
	seti(&c.Concurrency, DefaultConcurrency)
	return c
}

// Validate checks the config.
func (c Config) Validate() error {
	var errs []error
	if c.Lease < 5*time.Second {
		errs = append(errs, fmt.Errorf("sweep: lease %s must be at least 5s (it must outlast a batch's sends)", c.Lease))
	}
	if c.PageSize < 1 || c.PageSize > 1000 {
		errs = append(errs, fmt.Errorf("sweep: page size %d must be 1..1000", c.PageSize))
	}
	if c.BatchSize < 1 || c.BatchSize > 100 {
		errs = append(errs, fmt.Errorf("sweep: batch size %d must be 1..100 (one BatchGetItem)", c.BatchSize))
	}
	if c.Concurrency < 1 || c.Concurrency > 100 {
		errs = append(errs, fmt.Errorf("sweep: concurrency %d must be 1..100", c.Concurrency))
	}
	if c.Margin < time.Second {
		errs = append(errs, fmt.Errorf("sweep: margin %s must be at least 1s", c.Margin))
	}
	if c.SettleAfter < 15*time.Minute {
		errs = append(errs, fmt.Errorf("sweep: settle-after %s must be at least 15m (longer than a retried message takes to come back)", c.SettleAfter))
	}
	if c.BackoffBase < time.Second || c.BackoffBase > time.Hour {
		errs = append(errs, fmt.Errorf("sweep: backoff base %s must be 1s..1h", c.BackoffBase))
	}
	if c.StuckAfter < time.Minute {
		errs = append(errs, fmt.Errorf("sweep: stuck-after %s must be at least 1m", c.StuckAfter))
	}
	return errors.Join(errs...)
}

// Deps are what the sweeper talks to.
type Deps struct {
	Rows      Rows
	Abandoner Abandoner
	// Incidents tells a settled row's outcome (dead-lettered or not) and
	// holds the replays the sweeper reopens when they are stuck.
	Incidents incident.Store
	Sender    outbox.Sender
	// Bodies keeps abandoned dispatches' messages on their incidents
	// (claim-checked payloads copied under the incident).
	Bodies *incident.Bodies
	// Metrics receives one EMF line per run (nil: none).
	Metrics *metric.Emitter
	Log     *slog.Logger
	// Now is the clock for row timestamps and due checks (default
	// time.Now); the run budget is always wall-clock time.
	Now func() time.Time
	// TraceHeader returns the trace header to carry into SQS (nil: none).
	TraceHeader func(context.Context) string
}

// New builds a sweeper; it refuses a config or dependencies that cannot
// work.
func New(cfg Config, d Deps) (*Sweeper, error) {
	cfg = cfg.WithDefaults()
	errs := []error{cfg.Validate()}
	if d.Rows == nil || d.Abandoner == nil || d.Incidents == nil || d.Sender == nil || d.Bodies == nil {
		errs = append(errs, errors.New("sweep: Rows, Abandoner, Incidents, Sender and Bodies are required"))
	} else if err := d.Bodies.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	d.Now, d.Log = clock.Or(d.Now), logging.OrDiscard(d.Log)
	return &Sweeper{cfg: cfg, d: d}, nil
}
