// Command subscriber-health is the subscriber-health monitor (an
// EventBridge schedule every minute, and asynchronous notices from the
// consumers and the admin API): it probes open topics on their backoff,
// closes recovered ones and ramps their drain, alerts once per transition,
// and applies each topic's breaker state to its SQS event source mapping.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/healthfn"
)

func main() {
	b := wire.NewBoot(healthfn.Name)
	cfg, err := healthfn.Load(b.Env, topology.Default())
	b.Check("invalid config", err)
	m, err := healthfn.New(cfg, healthfn.NewClients(b.AWSConfig()), b.Runtime())
	b.Check("build", err)
	lambda.Start(m.Handle)
}
