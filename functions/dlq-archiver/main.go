// Command dlq-archiver drains every topic's dead-letter queue (SQS event
// sources with ReportBatchItemFailures) into the incident ledger, keeps
// large bodies in S3, marks the dispatch rows dlq and alerts the SNS alert
// topic. A message is acknowledged only once its incident is written.
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
	log := logging.Lambda("dlq-archiver")
	cfg, err := wire.LoadArchiverConfig(envconf.New(), topology.Default())
	if err != nil {
		fail(log, "invalid config", err)
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fail(log, "aws config", err)
	}
	trace.Instrument(&awsCfg) // AWS calls as X-Ray subsegments (active tracing)
	a := wire.NewArchiver(cfg, wire.NewClients(awsCfg), log, &metric.Emitter{})
	lambda.Start(a.Handle)
}

func fail(log *slog.Logger, msg string, err error) {
	log.Error("dlq-archiver: cold start failed: "+msg, "error", err)
	os.Exit(1)
}
