// Command consumer-archive is the consumer Lambda of an archive topic (one
// function per topic, chosen by CONSUMER_TOPIC): it writes each batch of
// events to S3 as newline-delimited JSON.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/archiveconsumerfn"
)

func main() {
	b := wire.NewBoot(archiveconsumerfn.Name)
	cfg, err := archiveconsumerfn.Load(b.Env, topology.Default())
	b.Check("invalid config", err)
	c, err := archiveconsumerfn.New(cfg, archiveconsumerfn.NewClients(b.AWSConfig()), b.Runtime())
	b.Check("build", err)
	lambda.Start(c.Handle)
}
