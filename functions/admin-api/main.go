// Command admin-api is the operator API behind API Gateway's /admin/*
// routes (HTTP API, payload format 2.0, one ANY /admin/{proxy+} route):
// health, queue depths, event and incident views, triage and replay. Every
// request needs Authorization: Bearer <key>, checked against the active
// keys in the ADMIN_API_KEY_SECRET_ARN secret.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/adminfn"
)

func main() {
	b := wire.NewBoot(adminfn.Name)
	cfg, err := adminfn.Load(b.Env, topology.Default())
	b.Check("invalid config", err)
	api, err := adminfn.New(b.Ctx, cfg, adminfn.NewClients(b.AWSConfig()), b.Runtime())
	b.Check("build", err)
	lambda.Start(api.Handle)
}
