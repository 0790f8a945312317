// Command webhook-stripe is the public Stripe webhook adapter behind API
// Gateway (HTTP API, payload format 2.0, POST /webhook/stripe): it verifies
// the Stripe-Signature header, canonicalizes the event into the platform
// envelope, invokes the private ingest function by ARN and maps its result
// to the HTTP status Stripe acts on.
package main

import (
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

func main() { wire.Main(webhookfn.Function) }
