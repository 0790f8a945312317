package admin

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// Config tunes the admin API.
type Config struct {
	// HealthTimeout bounds the health probes together (1s..20s: the
	// function answers API Gateway within its 30 s limit).
	HealthTimeout time.Duration
	// SignIn limits wrong bearer keys per source (Gate.Bearer), the limit
	// the console's sign-in form counts against too.
	SignIn SignInLimit
}

// DefaultHealthTimeout bounds GET /admin/health's probes.
const DefaultHealthTimeout = 5 * time.Second

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.HealthTimeout == 0 {
		c.HealthTimeout = DefaultHealthTimeout
	}
	c.SignIn = c.SignIn.WithDefaults()
	return c
}

// Validate checks the config.
func (c Config) Validate() error {
	if c.HealthTimeout < time.Second || c.HealthTimeout > 20*time.Second {
		return fmt.Errorf("admin: health timeout %s must be 1s..20s", c.HealthTimeout)
	}
	return c.SignIn.Validate()
}

// Deps are what the admin API talks to.
type Deps struct {
	Keys      Keys
	Views     Views
	Replayer  Replayer
	Incidents Incidents
	Queues    QueueStats
	// Checks are GET /admin/health's probes.
	Checks []Check
	// Purge serves /admin/purge/* (nil: those routes answer 404), probed by
	// PurgeChecks.
	Purge       PurgeViews
	PurgeChecks []Check
	// Jobs serves /admin/jobs (nil: those routes answer 404).
	Jobs Jobs
	// Exports serves /admin/jobs/{id}/download (nil: 404).
	Exports operator.Exports
	// Retention serves /admin/tenants/{t}/retention (nil: 404).
	Retention Retention
	// Breakers serves /admin/topics (nil: those routes answer 404).
	Breakers Breakers
	// Console serves /console… (nil: those paths answer 404).
	Console Console
	// SignIns counts wrong bearer keys per source (Config.SignIn); nil
	// leaves bearer keys unlimited (tests of other routes).
	SignIns  SignIns
	Topology topology.Topology
	Now      func() time.Time
	Log      *slog.Logger
}

// New builds the admin API; it refuses a config or dependencies that
// cannot work (without Keys it would answer every request 401).
func New(cfg Config, d Deps) (*API, error) {
	cfg = cfg.WithDefaults()
	errs := []error{cfg.Validate()}
	if d.Keys == nil || d.Views == nil || d.Replayer == nil || d.Incidents == nil || d.Queues == nil {
		errs = append(errs, errors.New("admin: Keys, Views, Replayer, Incidents and Queues are required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	d.Now, d.Log = clock.Or(d.Now), logging.OrDiscard(d.Log)
	a := &API{cfg: cfg, d: d}
	if d.SignIns != nil {
		a.gate = &Gate{Limit: cfg.SignIn, Store: d.SignIns, Now: d.Now}
	}
	return a, nil
}

// MinKeyLen rejects trivially guessable bearer keys (the local default,
// "dev-admin-key", is 13).
const MinKeyLen = 12

// CheckKeys refuses a key set with a key shorter than MinKeyLen; errors
// never quote a key.
func CheckKeys(keys []string) error {
	var errs []error
	for i, k := range keys {
		if len(k) < MinKeyLen {
			errs = append(errs, fmt.Errorf("key #%d is shorter than %d characters", i+1, MinKeyLen))
		}
	}
	return errors.Join(errs...)
}
