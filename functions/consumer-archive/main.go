// Command consumer-archive is the consumer Lambda of an archive topic (one
// function per topic, chosen by CONSUMER_TOPIC): it writes each batch of
// events to S3 as newline-delimited JSON.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
)

func main() {
	b := wire.NewBoot("consumer-archive")
	top := topology.Default()
	cfg, err := wire.LoadArchiveConsumerConfig(envconf.New(), top)
	b.Check("invalid config", err)
	consumer, err := wire.NewArchiveConsumer(cfg, top, b.Clients(), b.Log.With("topic", cfg.Topic))
	b.Check("build consumer", err)
	lambda.Start(consumer.Handle)
}
