// Command jobs-sweep is the job engine's schedule target: every 15 minutes
// it rediscovers due jobs (and jobs whose lease expired) and wakes them
// through the jobs queue; daily schedules start the Stripe reconciliation
// and a retention expiry per tenant with a policy (docs/jobs.md; its
// descriptor, jobsfn.SweepFunction, declares them). It runs no steps, so
// it links no client the steps use.
package main

import (
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/jobsfn"
)

func main() { wire.Main(jobsfn.SweepFunction) }
