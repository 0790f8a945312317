// Command dlq-archiver drains every topic's dead-letter queue (SQS event
// sources with ReportBatchItemFailures) into the incident ledger, keeps
// large bodies in S3, marks the dispatch rows dlq and alerts the SNS alert
// topic. A message is acknowledged only once its incident is written.
package main

import (
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/dlqarchiverfn"
)

func main() { wire.Main(dlqarchiverfn.Function) }
