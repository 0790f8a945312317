// Command consumer-archive is the consumer Lambda of an archive topic (one
// function per topic, chosen by CONSUMER_TOPIC): it writes each batch of
// events to S3 as newline-delimited JSON.
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
	log := logging.Lambda("consumer-archive")
	top := topology.Default()
	cfg, err := wire.LoadArchiveConsumerConfig(envconf.New(), top)
	if err != nil {
		fail(log, "invalid config", err)
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fail(log, "aws config", err)
	}
	trace.Instrument(&awsCfg) // AWS calls as X-Ray subsegments (active tracing)
	consumer, err := wire.NewArchiveConsumer(cfg, top, wire.NewClients(awsCfg), log.With("topic", cfg.Topic))
	if err != nil {
		fail(log, "build consumer", err)
	}
	lambda.Start(consumer.Handle)
}

func fail(log *slog.Logger, msg string, err error) {
	log.Error("consumer-archive: cold start failed: "+msg, "error", err)
	os.Exit(1)
}
