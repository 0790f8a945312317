// Command ingest is the private ingestion Lambda. It has no URL and no API
// route: producers (the webhook adapters, internal services) invoke it by ARN
// with a platform envelope and get an ingest result back.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
)

func main() {
	b := wire.NewBoot("ingest")
	top := topology.Default()
	cfg, err := wire.LoadIngestConfig(envconf.New(), top)
	b.Check("invalid config", err)
	svc := wire.NewIngest(cfg, top, b.Clients(), b.Log)
	lambda.Start(svc.Handle)
}
