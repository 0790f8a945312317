// Command consumer-http is the consumer Lambda of an HTTP topic (one
// function per topic, chosen by CONSUMER_TOPIC): an SQS event source with
// ReportBatchItemFailures feeds it batches, and it delivers each event to
// the topic's subscriber, signed the Standard Webhooks way.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/httpconsumerfn"
)

func main() {
	b := wire.NewBoot(httpconsumerfn.Name)
	cfg, err := httpconsumerfn.Load(b.Env, topology.Default())
	b.Check("invalid config", err)
	c, err := httpconsumerfn.New(b.Ctx, cfg, httpconsumerfn.NewClients(b.AWSConfig()), b.Runtime())
	b.Check("build", err)
	lambda.Start(c.Handle)
}
