package jobs

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
)

// Config tunes the engine.
type Config struct {
	// Retention keeps a finished job (and its idempotency key) this long
	// (1h..365d).
	Retention time.Duration
	// LeaseMargin is added to a kind's step timeout for its lease: the
	// commit must fit in it (1s..5m).
	LeaseMargin time.Duration
	// CheckpointInlineBytes is the largest checkpoint kept in the job item;
	// larger ones go to Bucket (1 KiB..300 KiB).
	CheckpointInlineBytes int
	// Bucket keeps large checkpoints.
	Bucket string
	// BackoffBase doubles per failed attempt up to BackoffCap.
	BackoffBase, BackoffCap time.Duration
	// SweepPageSize is the due index page (1..1000); SweepConcurrency bounds
	// wakes (or, without a queue, steps) a sweep runs at once (1..64).
	SweepPageSize, SweepConcurrency int
}

// Defaults.
const (
	DefaultRetention      = 30 * 24 * time.Hour
	DefaultLeaseMargin    = 30 * time.Second
	DefaultCheckpointSize = 32 << 10
	DefaultStepTimeout    = 30 * time.Second
	DefaultMaxAttempts    = 5
	maxCheckpointInline   = 300 << 10
	maxArgsBytes          = 32 << 10
	maxKeepFor            = 3 * 365 * 24 * time.Hour
	// MinRetention keeps a job at least as long as a dead letter can wait
	// in its DLQ (14 days): the DLQ archiver reads a subject's erasure job
	// to decide whether a dead letter that outlived its ledger item may
	// still open an incident (docs/architecture.md §5 item 13), so a
	// shorter retention would let it forget an erasure it must honour.
	MinRetention = 14 * 24 * time.Hour
)

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.Retention == 0 {
		c.Retention = DefaultRetention
	}
	if c.LeaseMargin == 0 {
		c.LeaseMargin = DefaultLeaseMargin
	}
	if c.CheckpointInlineBytes == 0 {
		c.CheckpointInlineBytes = DefaultCheckpointSize
	}
	if c.BackoffBase == 0 {
		c.BackoffBase = 10 * time.Second
	}
	if c.BackoffCap == 0 {
		c.BackoffCap = 15 * time.Minute
	}
	if c.SweepPageSize == 0 {
		c.SweepPageSize = 100
	}
	if c.SweepConcurrency == 0 {
		c.SweepConcurrency = 8
	}
	return c
}

// Validate checks the config.
func (c Config) Validate() error {
	var errs []error
	if c.Retention < MinRetention || c.Retention > 365*24*time.Hour {
		errs = append(errs, fmt.Errorf("jobs: retention %s must be 14d..365d (a job outlives the dead letters that consult it)", c.Retention))
	}
	if c.LeaseMargin < time.Second || c.LeaseMargin > 5*time.Minute {
		errs = append(errs, fmt.Errorf("jobs: lease margin %s must be 1s..5m", c.LeaseMargin))
	}
	if c.CheckpointInlineBytes < 1<<10 || c.CheckpointInlineBytes > maxCheckpointInline {
		errs = append(errs, fmt.Errorf("jobs: inline checkpoint limit %d must be 1 KiB..300 KiB", c.CheckpointInlineBytes))
	}
	if c.BackoffBase < time.Second || c.BackoffCap < c.BackoffBase || c.BackoffCap > 12*time.Hour {
		errs = append(errs, fmt.Errorf("jobs: backoff %s..%s must be 1s ≤ base ≤ cap ≤ 12h", c.BackoffBase, c.BackoffCap))
	}
	if c.SweepPageSize < 1 || c.SweepPageSize > 1000 || c.SweepConcurrency < 1 || c.SweepConcurrency > 64 {
		errs = append(errs, fmt.Errorf("jobs: sweep page %d must be 1..1000 and concurrency %d 1..64", c.SweepPageSize, c.SweepConcurrency))
	}
	return errors.Join(errs...)
}

// Deps are what the engine talks to.
type Deps struct {
	Store Store
	// Waker sends wakes; nil runs without a queue: jobs progress by the
	// sweep alone, which then runs their steps itself.
	Waker Waker
	// Blobs keeps large checkpoints (Config.Bucket).
	Blobs Blobs
	// Incidents receives jobs that fail for good.
	Incidents incident.Store
	Kinds     []Kind
	Metrics   *metric.Emitter
	Log       *slog.Logger
	Now       func() time.Time
}

// Engine runs durable jobs; build it with New.
type Engine struct {
	cfg   Config
	d     Deps
	kinds map[string]Kind
}

// New builds the engine; it refuses a config, dependencies or kinds that
// cannot work.
func New(cfg Config, d Deps) (*Engine, error) {
	cfg = cfg.WithDefaults()
	errs := []error{cfg.Validate()}
	if d.Store == nil || d.Incidents == nil || d.Blobs == nil || cfg.Bucket == "" {
		errs = append(errs, errors.New("jobs: Store, Incidents, Blobs and a Bucket are required"))
	}
	kinds := map[string]Kind{}
	for _, k := range d.Kinds {
		switch {
		case !validKind(k.Name):
			errs = append(errs, fmt.Errorf("jobs: kind name %q must be lowercase words joined by -", k.Name))
		case kinds[k.Name].Name != "":
			errs = append(errs, fmt.Errorf("jobs: kind %s registered twice", k.Name))
		}
		if k.MaxAttempts == 0 {
			k.MaxAttempts = DefaultMaxAttempts
		}
		if k.StepTimeout == 0 {
			k.StepTimeout = DefaultStepTimeout
		}
		if k.MaxAttempts < 1 || k.MaxAttempts > 100 || k.StepTimeout < time.Second || k.StepTimeout > 14*time.Minute {
			errs = append(errs, fmt.Errorf("jobs: kind %s: attempts 1..100 and step timeout 1s..14m", k.Name))
		}
		if k.KeepFor != 0 && (k.KeepFor < time.Hour || k.KeepFor > maxKeepFor) {
			errs = append(errs, fmt.Errorf("jobs: kind %s: KeepFor %s must be 1h..%s", k.Name, k.KeepFor, maxKeepFor))
		}
		kinds[k.Name] = k
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	d.Now, d.Log = clock.Or(d.Now), logging.OrDiscard(d.Log)
	if d.Metrics == nil {
		d.Metrics = metric.Discard()
	}
	return &Engine{cfg: cfg, d: d, kinds: kinds}, nil
}

// Kinds lists the registered kinds' names.
func (e *Engine) Kinds() []string {
	var out []string
	for n := range e.kinds {
		out = append(out, n)
	}
	return out
}

// keep is how long a finished job of kind is kept.
func (e *Engine) keep(kind Kind) time.Duration {
	if kind.KeepFor > 0 {
		return kind.KeepFor
	}
	return e.cfg.Retention
}

func (e *Engine) count(name string, n int) {
	if n > 0 {
		e.d.Metrics.Emit(nil, metric.Metric{Name: name, Unit: metric.Count, Value: float64(n)})
	}
}

func validTenant(t string) bool { return envelope.ValidTenant(t) }
