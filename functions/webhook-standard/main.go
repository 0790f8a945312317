// Command webhook-standard is the public Standard Webhooks webhook adapter behind API
// Gateway (HTTP API, payload format 2.0, POST /webhook/standard/{source}): it verifies
// the webhook-signature header on the raw body, canonicalizes the delivery into
// the platform envelope, invokes the private ingest function by ARN and
// maps its result to the HTTP status the sender acts on
// (internal/webhook/standard).
package main

import (
	"github.com/siteswarm/eventplatform/internal/webhook/standard"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

func main() { wire.Main(webhookfn.For(standard.Declaration)) }
