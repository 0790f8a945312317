// Command consumer-http is the consumer Lambda of an HTTP topic (one
// function per topic, chosen by CONSUMER_TOPIC): an SQS event source with
// ReportBatchItemFailures feeds it batches, and it delivers each event to
// the topic's subscriber, signed the Standard Webhooks way.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
)

func main() {
	b := wire.NewBoot("consumer-http")
	top := topology.Default()
	cfg, err := wire.LoadHTTPConsumerConfig(envconf.New(), top)
	b.Check("invalid config", err)
	consumer, err := wire.NewHTTPConsumer(b.Ctx, cfg, top, b.Clients(), b.Log.With("topic", cfg.Topic))
	b.Check("build consumer", err)
	lambda.Start(consumer.Handle)
}
