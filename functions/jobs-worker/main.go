// Command jobs-worker advances durable jobs: the jobs queue's SQS event
// source feeds it wakes, and it runs one bounded, leased step of each woken
// job (docs/jobs.md).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/jobsworkerfn"
)

func main() {
	b := wire.NewBoot(jobsworkerfn.WorkerName)
	cfg, err := jobsworkerfn.Load(b.Env, topology.Default())
	b.Check("invalid config", err)
	e, err := jobsworkerfn.New(b.Ctx, cfg, jobsworkerfn.NewClients(b.AWSConfig()), b.Runtime())
	b.Check("build", err)
	lambda.Start(e.HandleSQS)
}
