// Command admin-api is the operator API behind API Gateway's /admin/*
// routes (HTTP API, payload format 2.0, one ANY /admin/{proxy+} route):
// health, queue depths, event and incident views, triage and replay. Every
// request needs Authorization: Bearer <key>, checked against the active
// keys in the ADMIN_API_KEY_SECRET_ARN secret.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
)

func main() {
	b := wire.NewBoot("admin-api")
	top := topology.Default()
	cfg, err := wire.LoadAdminConfig(envconf.New(), top)
	b.Check("invalid config", err)
	api, err := wire.NewAdmin(b.Ctx, cfg, top, b.Clients(), b.Log)
	b.Check("handler", err)
	lambda.Start(api.Handle)
}
