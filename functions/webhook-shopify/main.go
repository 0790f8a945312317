// Command webhook-shopify is the public Shopify webhook adapter behind API
// Gateway (HTTP API, payload format 2.0, POST /webhook/shopify): it verifies
// the X-Shopify-Hmac-Sha256 header on the raw body, canonicalizes the delivery into
// the platform envelope, invokes the private ingest function by ARN and
// maps its result to the HTTP status the sender acts on
// (internal/webhook/shopify).
package main

import (
	"github.com/siteswarm/eventplatform/internal/webhook/shopify"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

func main() { wire.Main(webhookfn.For(shopify.Declaration)) }
