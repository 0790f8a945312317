// Command purge-api is the cache purge service's private API: producers
// (CMS workers, internal services) invoke it by ARN with
// {"op":"purgeTags","tenantId":…,"tags":[…]} or
// {"op":"getPurgeStatus","jobId":…}; it validates, coalesces and queues
// purges through ingest, and never answers bad input with a function error.
package main

import (
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/purgeapifn"
)

func main() { wire.Main(purgeapifn.Function) }
