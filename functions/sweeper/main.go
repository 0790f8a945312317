// Command sweeper is the outbox sweeper, run by an EventBridge schedule
// every 2 minutes: it resends dispatch rows a producer left pending or
// failed, with exponential backoff, and abandons exhausted ones to
// incidents. Overlapping runs are safe.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/metric"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
)

func main() {
	b := wire.NewBoot("sweeper")
	top := topology.Default()
	cfg, err := wire.LoadSweeperConfig(envconf.New(), top)
	b.Check("invalid config", err)
	s := wire.NewSweeper(cfg, top, b.Clients(), b.Log, metric.ForStage(cfg.Stage))
	lambda.Start(s.Handle)
}
