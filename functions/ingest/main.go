// Command ingest is the private ingestion Lambda. It has no URL and no API
// route: producers (the webhook adapters, internal services) invoke it by ARN
// with a platform envelope and get an ingest result back.
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
	log := logging.Lambda("ingest")
	top := topology.Default()
	cfg, err := wire.LoadIngestConfig(envconf.New(), top)
	if err != nil {
		fail(log, "invalid config", err)
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fail(log, "aws config", err)
	}
	trace.Instrument(&awsCfg) // AWS calls as X-Ray subsegments (active tracing)
	svc := wire.NewIngest(cfg, top, wire.NewClients(awsCfg), log)
	lambda.Start(svc.Handle)
}

func fail(log *slog.Logger, msg string, err error) {
	log.Error("ingest: cold start failed: "+msg, "error", err)
	os.Exit(1)
}
