// Command dlq-archiver drains every topic's dead-letter queue (SQS event
// sources with ReportBatchItemFailures) into the incident ledger, keeps
// large bodies in S3, marks the dispatch rows dlq and alerts the SNS alert
// topic. A message is acknowledged only once its incident is written.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/metric"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
)

func main() {
	b := wire.NewBoot("dlq-archiver")
	cfg, err := wire.LoadArchiverConfig(envconf.New(), topology.Default())
	b.Check("invalid config", err)
	a := wire.NewArchiver(cfg, b.Clients(), b.Log, metric.ForStage(cfg.Stage))
	lambda.Start(a.Handle)
}
