// Command ingest is the private ingestion Lambda. It has no URL and no API
// route: producers (the webhook adapters, internal services) invoke it by ARN
// with a platform envelope and get an ingest result back.
package main

import (
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/ingestfn"
)

func main() {
	b := wire.NewBoot(ingestfn.Name)
	cfg, err := ingestfn.Load(b.Env, topology.Default())
	b.Check("invalid config", err)
	svc, err := ingestfn.New(cfg, ingestfn.NewClients(b.AWSConfig()), b.Runtime())
	b.Check("build", err)
	// The enqueued marks are written after the answer (ingestfn.Deps).
	b.Start(svc.Handle)
}
