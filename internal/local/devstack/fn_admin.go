package devstack

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/adminfn"
	"github.com/siteswarm/eventplatform/internal/wire/jobsfn"
)

func init() { register(adminfn.Name, adminFunction) }

// AdminRoute is the admin API's route: one greedy ANY route, as deployed.
var AdminRoute = lambdalocal.HTTPRoute{Method: "ANY", Path: "/admin/{proxy+}"}

// ConsoleRoutes serve the operations console from the admin function, as
// deployed: /console and everything under it.
var ConsoleRoutes = []lambdalocal.HTTPRoute{{Method: "ANY", Path: "/console"}, {Method: "ANY", Path: "/console/{proxy+}"}}

// AdminResources are the admin-api settings the local stack decides: the
// replay function's resources (its routes run the replay engine
// in-process) and the DLQ URLs (queue depths). The bearer key is the
// stack's ADMIN_API_KEY setting (default DefaultAdminKey; Secrets Manager
// is not emulated).
func (s *Stack) AdminResources() (map[string]string, error) {
	res, err := s.RecoveryResources("")
	if err != nil {
		return nil, err
	}
	dlqs, err := json.Marshal(s.Resources.DLQURLs())
	if err != nil {
		return nil, err
	}
	res[wire.EnvDLQURLs] = string(dlqs)
	res[wire.EnvPurgeTable] = s.Resources.PurgeTable
	res[adminfn.EnvAdminTable] = s.Resources.AdminTable
	res[adminfn.EnvConsoleInsecureCookie] = "true" // plain HTTP locally
	res[jobsfn.EnvJobsTable] = s.Resources.JobsTable
	res[jobsfn.EnvJobsQueueURL] = s.Resources.JobsQueue.URL
	res[wire.EnvHealthFunction] = FunctionHealth // pause and resume apply at once
	return res, nil
}

func adminFunction(ctx context.Context, s *Stack) ([]Function, error) {
	res, err := s.AdminResources()
	if err != nil {
		return nil, err
	}
	cfg, err := adminfn.Load(s.env(res), s.Topology)
	if err != nil {
		return nil, fmt.Errorf("admin-api config: %w", err)
	}
	c := s.Clients
	api, err := adminfn.New(coldStart(ctx, adminfn.Name), cfg, adminfn.Clients{Clients: c.Data(), Lambda: c.Lambda, CloudWatch: c.CloudWatch}, s.runtime(adminfn.Name))
	if err != nil {
		return nil, err
	}
	return []Function{{Name: adminfn.Name, Handler: api.Handle, Timeout: adminfn.FunctionTimeout, Triggers: []lambdalocal.Trigger{AdminRoute, ConsoleRoutes[0], ConsoleRoutes[1]}}}, nil
}
