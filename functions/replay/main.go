// Command replay is the replay engine and operator API: the Step Functions
// replay state machine calls its select / replay-one / summarize actions,
// and the evp CLI and admin tooling invoke it for list, get, triage, ignore,
// event views and direct replays (docs/operations.md).
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
	log := logging.Lambda("replay")
	top := topology.Default()
	cfg, err := wire.LoadReplayConfig(envconf.New(), top)
	if err != nil {
		fail(log, "invalid config", err)
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fail(log, "aws config", err)
	}
	trace.Instrument(&awsCfg) // AWS calls as X-Ray subsegments (active tracing)
	svc := wire.NewReplay(cfg, top, wire.NewClients(awsCfg), log)
	lambda.Start(svc.Handle)
}

func fail(log *slog.Logger, msg string, err error) {
	log.Error("replay: cold start failed: "+msg, "error", err)
	os.Exit(1)
}
