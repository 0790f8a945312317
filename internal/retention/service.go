package retention

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
)

// KindPurge is the retention expiry's job kind (internal/jobkinds builds it).
const KindPurge = "retention-expiry"

// Codes of refused requests (jobs.RequestError, as the job operations
// refuse).
const (
	CodeInvalidTenant   = "invalid_tenant"
	CodeInvalidPolicy   = "invalid_policy"
	CodeVersionConflict = "version_conflict"
)

// Config is the platform side of every policy.
type Config struct {
	// Defaults resolve what a policy leaves unset.
	Defaults Defaults
	// MaxEventDays is the ledger retention (the events' TTL), the longest
	// a tenant may keep events.
	MaxEventDays int
}

// WithDefaults fills unset fields: events default to the ledger retention.
func (c Config) WithDefaults() Config {
	if c.Defaults.EventsDays == 0 {
		c.Defaults.EventsDays = c.MaxEventDays
	}
	return c
}

// Validate checks the config.
func (c Config) Validate() error {
	if c.MaxEventDays < MinEventDays || c.MaxEventDays > MaxDays {
		return fmt.Errorf("retention: the ledger retention %d days must be %d..%d", c.MaxEventDays, MinEventDays, MaxDays)
	}
	d := Policy{EventsDays: c.Defaults.EventsDays, IncidentsDays: c.Defaults.IncidentsDays, ArchivesDays: c.Defaults.ArchivesDays, ExportsDays: c.Defaults.ExportsDays}
	if err := d.Validate(c.MaxEventDays); err != nil {
		return fmt.Errorf("retention: platform defaults: %w", err)
	}
	return nil
}

// Starter starts jobs (*jobs.Engine).
type Starter interface {
	Start(ctx context.Context, p jobs.StartParams) (jobs.Job, bool, error)
}

// Deps are the service's ports.
type Deps struct {
	Store Store
	// Jobs starts the purge a shortened policy needs (nil: none is
	// started, the daily run applies it).
	Jobs Starter
	Now  func() time.Time
}

// Service reads and sets policies.
type Service struct {
	cfg Config
	d   Deps
}

// New builds the service.
func New(cfg Config, d Deps) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if d.Store == nil {
		return nil, errors.New("retention: a Store is required")
	}
	d.Now = clock.Or(d.Now)
	return &Service{cfg: cfg, d: d}, nil
}

// Config is the service's (defaulted) config.
func (s *Service) Config() Config { return s.cfg }

// View is a tenant's policy as shown: what it sets, what applies, and the
// platform's defaults and limits.
type View struct {
	Policy    Policy   `json:"policy"`
	Effective Periods  `json:"effective"`
	Defaults  Defaults `json:"defaults"`
	// MaxEventDays is the ledger retention (the events' TTL).
	MaxEventDays int `json:"maxEventDays"`
	// Purge is the purge a shortening Set started (or found started).
	Purge *jobs.Job `json:"purge,omitempty"`
}

func (s *Service) view(p Policy) View {
	return View{Policy: p, Effective: p.Effective(s.cfg.Defaults), Defaults: s.cfg.Defaults, MaxEventDays: s.cfg.MaxEventDays}
}

func checkTenant(t string) error {
	if !envelope.ValidTenant(t) {
		return &jobs.RequestError{Code: CodeInvalidTenant, Message: "tenant must be 1 to 64 lowercase letters, digits, _ or -"}
	}
	return nil
}

// Get is a tenant's policy (the defaults when it has none).
func (s *Service) Get(ctx context.Context, tenant string) (View, error) {
	if err := checkTenant(tenant); err != nil {
		return View{}, err
	}
	p, ok, err := s.d.Store.Get(ctx, tenant)
	if err != nil {
		return View{}, err
	}
	if !ok {
		p = Policy{TenantID: tenant}
	}
	return s.view(p), nil
}

// Effective is the periods that apply to a tenant.
func (s *Service) Effective(ctx context.Context, tenant string) (Policy, Periods, error) {
	v, err := s.Get(ctx, tenant)
	return v.Policy, v.Effective, err
}

// SetParams replace a tenant's periods (0: the platform default).
type SetParams struct {
	TenantID                                             string
	EventsDays, IncidentsDays, ArchivesDays, ExportsDays int
	// IfVersion, when set, refuses the write unless the stored policy is
	// at that version (0: none stored yet).
	IfVersion *int
	Actor     string
}

// Set writes a tenant's policy. A policy that keeps anything for less
// time than before starts a retention expiry at once (keyed by the policy
// version, so a retried Set starts it once), which applies it to what is
// already stored.
func (s *Service) Set(ctx context.Context, p SetParams) (View, error) {
	if err := checkTenant(p.TenantID); err != nil {
		return View{}, err
	}
	next := Policy{TenantID: p.TenantID, EventsDays: p.EventsDays, IncidentsDays: p.IncidentsDays, ArchivesDays: p.ArchivesDays, ExportsDays: p.ExportsDays, UpdatedBy: p.Actor}
	if err := next.Validate(s.cfg.MaxEventDays); err != nil {
		return View{}, &jobs.RequestError{Code: CodeInvalidPolicy, Message: err.Error()}
	}
	for attempt := 0; ; attempt++ {
		before, ok, err := s.d.Store.Get(ctx, p.TenantID)
		if err != nil {
			return View{}, err
		}
		if !ok {
			before = Policy{TenantID: p.TenantID}
		}
		if p.IfVersion != nil && *p.IfVersion != before.Version {
			return View{}, &jobs.RequestError{Code: CodeVersionConflict, Message: fmt.Sprintf("the policy is at version %d, not %d", before.Version, *p.IfVersion)}
		}
		next.Version, next.UpdatedAt = before.Version, s.d.Now().UTC()
		stored, err := s.d.Store.Put(ctx, next)
		if errors.Is(err, ErrConflict) && p.IfVersion == nil && attempt < 3 {
			continue
		}
		if errors.Is(err, ErrConflict) {
			return View{}, &jobs.RequestError{Code: CodeVersionConflict, Message: "the policy changed meanwhile; read it and try again"}
		}
		if err != nil {
			return View{}, err
		}
		v := s.view(stored)
		if stored.Shortens(before, s.cfg.Defaults) && s.d.Jobs != nil {
			args, _ := json.Marshal(map[string]int{"policyVersion": stored.Version})
			j, _, err := s.d.Jobs.Start(ctx, jobs.StartParams{Kind: KindPurge, TenantID: p.TenantID,
				IdempotencyKey: "policy-v" + strconv.Itoa(stored.Version), Args: args})
			if err != nil {
				return v, fmt.Errorf("retention: the policy is stored (version %d) but its purge did not start (the daily run applies it): %w", stored.Version, err)
			}
			v.Purge = &j
		}
		return v, nil
	}
}
