package devstack

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/wire"
)

func init() { register("admin-api", adminFunction) }

// AdminRoute is the admin API's route: one greedy ANY route, as deployed.
var AdminRoute = lambdalocal.HTTPRoute{Method: "ANY", Path: "/admin/{proxy+}"}

// AdminSettings are the admin-api settings of the local stack: the replay
// function's (its routes run the replay service in-process), the DLQ URLs
// (queue depths), and the bearer key from ADMIN_API_KEY (default
// DefaultAdminKey; Secrets Manager is not emulated).
func (s *Stack) AdminSettings() (map[string]string, error) {
	settings, err := s.RecoverySettings("")
	if err != nil {
		return nil, err
	}
	dlqs, err := json.Marshal(s.Resources.DLQURLs())
	if err != nil {
		return nil, err
	}
	settings[wire.EnvDLQURLs] = string(dlqs)
	settings[wire.EnvAdminKey] = s.AdminKey()
	if v := s.Settings.String(wire.EnvAdminKeyRefresh, ""); v != "" {
		settings[wire.EnvAdminKeyRefresh] = v
	}
	return settings, nil
}

func adminFunction(ctx context.Context, s *Stack) ([]Function, error) {
	settings, err := s.AdminSettings()
	if err != nil {
		return nil, err
	}
	cfg, err := wire.LoadAdminConfig(envconf.FromMap(settings), s.Topology)
	if err != nil {
		return nil, fmt.Errorf("admin-api config: %w", err)
	}
	log := s.Log.With("function", "admin-api")
	api, err := wire.NewAdmin(ctx, cfg, s.Topology, s.Clients, log)
	if err != nil {
		return nil, err
	}
	return []Function{{Name: "admin-api", Handler: api.Handle, Timeout: wire.AdminFunctionTimeout, Triggers: []lambdalocal.Trigger{AdminRoute}}}, nil
}
