package consume

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/siteswarm/eventplatform/internal/claimcheck"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// Config tunes one topic's consumer.
type Config struct {
	// Topic is the consumed topic (its timeout and FIFO-ness come from it).
	Topic topology.Topic
	// Backoff of transient failures (Base 1s..1h, Cap Base..12h).
	Backoff Backoff
	// Concurrency bounds the messages (FIFO: groups) one invocation works
	// on at once (1..100).
	Concurrency int
}

// DefaultConcurrency bounds the messages (standard queue) or message
// groups (FIFO) one invocation works on at once.
const DefaultConcurrency = 10

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.Backoff.Base == 0 {
		c.Backoff.Base = DefaultBackoffBase
	}
	if c.Backoff.Cap == 0 {
		c.Backoff.Cap = DefaultBackoffCap
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	return c
}

// Validate checks the config.
func (c Config) Validate() error {
	var errs []error
	if c.Topic.Name == "" {
		errs = append(errs, errors.New("consume: no topic"))
	}
	if c.Backoff.Base < time.Second || c.Backoff.Base > time.Hour {
		errs = append(errs, fmt.Errorf("consume: backoff base %s must be 1s..1h (SQS visibility is counted in seconds)", c.Backoff.Base))
	}
	if c.Backoff.Cap < c.Backoff.Base || c.Backoff.Cap > maxVisibility {
		errs = append(errs, fmt.Errorf("consume: backoff cap %s must be between the base and 12h (SQS's visibility limit)", c.Backoff.Cap))
	}
	if c.Concurrency < 1 || c.Concurrency > 100 {
		errs = append(errs, fmt.Errorf("consume: concurrency %d must be 1..100", c.Concurrency))
	}
	return errors.Join(errs...)
}

// Deps are what a consumer talks to. Set exactly one of Handler and
// Batch.
type Deps struct {
	Handler Handler
	Batch   BatchHandler
	Rows    Rows
	Queue   Queue
	// Payloads fetches claim-checked payloads.
	Payloads claimcheck.Store
	// Incidents attests successful replays; nil skips attestation (a
	// topic deployed without the incident store).
	Incidents Incidents
	// Breaker is the topic's subscriber health; nil: none (failed
	// messages are dead-lettered after their attempts, whatever the
	// subscriber's state).
	Breaker Breaker
	// Metrics receives one EMF line per message (nil: none).
	Metrics *metric.Emitter
	Log     *slog.Logger
	Now     func() time.Time
	// Trace, when set, starts a trace segment per message continuing the
	// producer's trace header (see internal/observe/trace); end records the
	// outcome.
	Trace func(ctx context.Context, name, upstream string) (_ context.Context, end func(error))
}

// New builds a consumer; it refuses a config or dependencies that cannot
// work.
func New(cfg Config, d Deps) (*Consumer, error) {
	cfg = cfg.WithDefaults()
	errs := []error{cfg.Validate()}
	if (d.Handler == nil) == (d.Batch == nil) {
		errs = append(errs, errors.New("consume: set exactly one of Handler and Batch"))
	}
	if d.Rows == nil || d.Queue == nil || d.Payloads == nil {
		errs = append(errs, errors.New("consume: Rows, Queue and Payloads are required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	d.Now, d.Log = clock.Or(d.Now), logging.OrDiscard(d.Log)
	return &Consumer{cfg: cfg, d: d}, nil
}
