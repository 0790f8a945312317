// Command jobs-worker advances durable jobs: the jobs queue's SQS event
// source feeds it wakes, and it runs one bounded, leased step of each woken
// job (docs/jobs.md).
package main

import (
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/jobsworkerfn"
)

func main() { wire.Main(jobsworkerfn.Function) }
