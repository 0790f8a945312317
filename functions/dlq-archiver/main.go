// Command dlq-archiver drains every topic's dead-letter queue (SQS event
// sources with ReportBatchItemFailures) into the incident ledger, keeps
// large bodies in S3, marks the dispatch rows dlq and alerts the SNS alert
// topic. A message is acknowledged only once its incident is written.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/dlqarchiverfn"
)

func main() {
	b := wire.NewBoot(dlqarchiverfn.Name)
	cfg, err := dlqarchiverfn.Load(b.Env, topology.Default())
	b.Check("invalid config", err)
	a, err := dlqarchiverfn.New(cfg, dlqarchiverfn.NewClients(b.AWSConfig()), b.Runtime())
	b.Check("build", err)
	lambda.Start(a.Handle)
}
