package webhook

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
)

// Config tunes a webhook handler.
type Config struct {
	// RetryAfter is sent with every 503 (1s..1h).
	RetryAfter time.Duration
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.RetryAfter == 0 {
		c.RetryAfter = DefaultRetryAfter
	}
	return c
}

// Validate checks the config.
func (c Config) Validate() error {
	if c.RetryAfter < time.Second || c.RetryAfter > time.Hour {
		return fmt.Errorf("webhook: retry-after %s must be 1s..1h", c.RetryAfter)
	}
	return nil
}

// Deps are what a webhook handler talks to.
type Deps struct {
	Provider Provider
	Ingest   Ingester
	Log      *slog.Logger
	// Metrics counts refusals (WebhookRefused by Provider and Code).
	Metrics *metric.Emitter
	// Now stamps each delivery's receipt (default time.Now).
	Now func() time.Time
}

// New builds a handler; it refuses a config or dependencies that cannot
// work.
func New(cfg Config, d Deps) (*Handler, error) {
	cfg = cfg.WithDefaults()
	errs := []error{cfg.Validate()}
	if d.Provider == nil || d.Ingest == nil {
		errs = append(errs, errors.New("webhook: Provider and Ingest are required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	d.Log = logging.OrDiscard(d.Log)
	if d.Metrics == nil {
		d.Metrics = metric.Discard()
	}
	d.Now = clock.Or(d.Now)
	return &Handler{cfg: cfg, d: d}, nil
}
