// Command jobs-sweep is the job engine's schedule target: every 15 minutes
// it rediscovers due jobs (and jobs whose lease expired) and wakes them; a
// daily schedule starts the Stripe reconciliation (docs/jobs.md).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/jobsworkerfn"
)

func main() {
	b := wire.NewBoot(jobsworkerfn.SweepName)
	cfg, err := jobsworkerfn.Load(b.Env, topology.Default())
	b.Check("invalid config", err)
	e, err := jobsworkerfn.New(b.Ctx, cfg, jobsworkerfn.NewClients(b.AWSConfig()), b.Runtime())
	b.Check("build", err)
	lambda.Start(e.HandleSchedule)
}
