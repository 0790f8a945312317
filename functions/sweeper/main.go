// Command sweeper is the outbox sweeper, run by an EventBridge schedule
// every 2 minutes: it resends dispatch rows a producer left pending or
// failed, with exponential backoff, and abandons exhausted ones to
// incidents. Overlapping runs are safe.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/sweeperfn"
)

func main() {
	b := wire.NewBoot(sweeperfn.Name)
	cfg, err := sweeperfn.Load(b.Env, topology.Default())
	b.Check("invalid config", err)
	s, err := sweeperfn.New(cfg, sweeperfn.NewClients(b.AWSConfig()), b.Runtime())
	b.Check("build", err)
	lambda.Start(s.Handle)
}
