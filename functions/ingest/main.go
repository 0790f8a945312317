// Command ingest is the private ingestion Lambda. It has no URL and no API
// route: producers (the webhook adapters, internal services) invoke it by ARN
// with a platform envelope and get an ingest result back.
package main

import (
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/ingestfn"
)

func main() { wire.Main(ingestfn.Function) }
