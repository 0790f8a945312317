package operator

import (
	"context"
	"errors"

	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/replay"
	"github.com/siteswarm/eventplatform/internal/retention"
)

// Actions on tenants' retention policies (the CLI's `evp tenants
// retention`; the admin API serves the same over HTTP).
const (
	ActionRetentionGet = "retention.get"
	ActionRetentionSet = "retention.set"
)

// Retention reads and sets tenants' retention policies (implemented by
// *retention.Service).
type Retention interface {
	Get(ctx context.Context, tenant string) (retention.View, error)
	Set(ctx context.Context, p retention.SetParams) (retention.View, error)
}

type (
	// RetentionGetIn names the tenant.
	RetentionGetIn struct {
		action
		TenantID string `json:"tenantId"`
	}
	// RetentionSetIn replaces a tenant's periods (0: the platform
	// default); IfVersion refuses the write unless the stored policy is
	// at that version.
	RetentionSetIn struct {
		action
		TenantID      string `json:"tenantId"`
		EventsDays    int    `json:"eventsDays"`
		IncidentsDays int    `json:"incidentsDays"`
		ArchivesDays  int    `json:"archivesDays"`
		ExportsDays   int    `json:"exportsDays"`
		IfVersion     *int   `json:"ifVersion"`
		Actor         string `json:"actor"`
	}
)

// WithRetention adds the retention.* actions.
func (f *Function) WithRetention(r Retention) *Function {
	refuse := func(err error) error {
		var re *jobs.RequestError
		if errors.As(err, &re) {
			return &replay.RequestError{Code: re.Code, Message: re.Message}
		}
		return err
	}
	f.routes[ActionRetentionGet] = typed(func(ctx context.Context, in RetentionGetIn) (retention.View, error) {
		v, err := r.Get(ctx, in.TenantID)
		return v, refuse(err)
	})
	f.routes[ActionRetentionSet] = typed(func(ctx context.Context, in RetentionSetIn) (retention.View, error) {
		v, err := r.Set(ctx, retention.SetParams{TenantID: in.TenantID, EventsDays: in.EventsDays, IncidentsDays: in.IncidentsDays,
			ArchivesDays: in.ArchivesDays, ExportsDays: in.ExportsDays, IfVersion: in.IfVersion, Actor: in.Actor})
		return v, refuse(err)
	})
	return f
}
