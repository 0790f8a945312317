// Command admin-api is the operator API behind API Gateway's /admin/*
// routes (HTTP API, payload format 2.0, one ANY /admin/{proxy+} route):
// health, queue depths, event and incident views, triage and replay. Every
// request needs Authorization: Bearer <key>, checked against the active
// keys in the ADMIN_API_KEY_SECRET_ARN secret.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/logging"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/trace"
	"github.com/siteswarm/eventplatform/internal/wire"
)

func main() {
	ctx := context.Background()
	log := logging.Lambda("admin-api")
	top := topology.Default()
	cfg, err := wire.LoadAdminConfig(envconf.New(), top)
	if err != nil {
		fail(log, "invalid config", err)
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fail(log, "aws config", err)
	}
	trace.Instrument(&awsCfg)
	api, err := wire.NewAdmin(ctx, cfg, top, wire.NewClients(awsCfg), log)
	if err != nil {
		fail(log, "handler", err)
	}
	lambda.Start(api.Handle)
}

func fail(log *slog.Logger, msg string, err error) {
	log.Error("admin-api: cold start failed: "+msg, "error", err)
	os.Exit(1)
}
