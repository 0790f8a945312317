// Command consumer-purge is the cache.purge topic's consumer: it groups a
// batch by tenant, unions the tags and purges them from the CDN in chunks
// of at most 100, paced per account, retrying and failing jobs by the cache
// purge service's rules (docs/purge.md).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/purgeconsumerfn"
)

func main() {
	b := wire.NewBoot(purgeconsumerfn.Name)
	cfg, err := purgeconsumerfn.Load(b.Env, topology.Default())
	b.Check("invalid config", err)
	c, err := purgeconsumerfn.New(b.Ctx, cfg, purgeconsumerfn.NewClients(b.AWSConfig()), b.Runtime())
	b.Check("build", err)
	lambda.Start(c.Handle)
}
