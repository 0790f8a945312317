// Command sweeper is the outbox sweeper, run by an EventBridge schedule
// every 2 minutes: it resends dispatch rows a producer left pending or
// failed, with exponential backoff, and abandons exhausted ones to
// incidents. Overlapping runs are safe.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/logging"
	"github.com/siteswarm/eventplatform/internal/metric"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/trace"
	"github.com/siteswarm/eventplatform/internal/wire"
)

func main() {
	ctx := context.Background()
	log := logging.Lambda("sweeper")
	top := topology.Default()
	cfg, err := wire.LoadSweeperConfig(envconf.New(), top)
	if err != nil {
		fail(log, "invalid config", err)
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fail(log, "aws config", err)
	}
	trace.Instrument(&awsCfg) // AWS calls as X-Ray subsegments (active tracing)
	s := wire.NewSweeper(cfg, top, wire.NewClients(awsCfg), log, &metric.Emitter{})
	lambda.Start(s.Handle)
}

func fail(log *slog.Logger, msg string, err error) {
	log.Error("sweeper: cold start failed: "+msg, "error", err)
	os.Exit(1)
}
