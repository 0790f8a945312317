package dlqarchiver

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
)

// Config tunes the archiver.
type Config struct {
	// DLQTopics maps a DLQ's ARN to its topic. The queue a dead letter was
	// read from decides its topic: a message's own topic attribute is only
	// a claim (one misrouted by hand would otherwise mark another topic's
	// row dlq and stop its sweep); a disagreeing one is recorded on the
	// incident.
	DLQTopics map[string]string
	// Concurrency bounds messages archived in parallel (1..10: an SQS
	// event source delivers at most 10 per batch).
	Concurrency int
}

// DefaultConcurrency archives a whole batch at once.
const DefaultConcurrency = 10

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	return c
}

// Validate checks the config.
func (c Config) Validate() error {
	var errs []error
	if len(c.DLQTopics) == 0 {
		errs = append(errs, errors.New("archiver: no DLQ → topic map (a dead letter's source queue decides its topic)"))
	}
	for arn, topic := range c.DLQTopics {
		if arn == "" || topic == "" {
			errs = append(errs, fmt.Errorf("archiver: DLQ map entry %q → %q is incomplete", arn, topic))
		}
	}
	if c.Concurrency < 1 || c.Concurrency > 10 {
		errs = append(errs, fmt.Errorf("archiver: concurrency %d must be 1..10", c.Concurrency))
	}
	return errors.Join(errs...)
}

// Deps are what the archiver talks to.
type Deps struct {
	// Incidents records dead letters, guarded by their dispatch row's
	// erasure marker.
	Incidents incident.Recorder
	Rows      Rows
	// Erasures tells whether a subject's erasure covers a dead letter
	// whose dispatch row is gone (its event past the ledger's retention):
	// there is no marker to check then.
	Erasures Erasures
	// Bodies keeps dead letters' messages (inline, or in the archive
	// bucket) and copies claim-checked payloads under the incident.
	Bodies *incident.Bodies
	// Alerts tell operators about new incidents (LogAlerter without an
	// alert topic).
	Alerts  Alerter
	Metrics *metric.Emitter
	Log     *slog.Logger
	Now     func() time.Time
}

// New builds the archiver; it refuses a config or dependencies that cannot
// work.
func New(cfg Config, d Deps) (*Archiver, error) {
	cfg = cfg.WithDefaults()
	errs := []error{cfg.Validate()}
	if d.Incidents == nil || d.Rows == nil || d.Erasures == nil || d.Bodies == nil || d.Alerts == nil {
		errs = append(errs, errors.New("archiver: Incidents, Rows, Erasures, Bodies and Alerts are required"))
	} else {
		errs = append(errs, d.Bodies.Validate())
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	d.Now, d.Log = clock.Or(d.Now), logging.OrDiscard(d.Log)
	return &Archiver{cfg: cfg, d: d}, nil
}
