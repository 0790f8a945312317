// Command webhook-stripe is the public Stripe webhook adapter behind API
// Gateway (HTTP API, payload format 2.0, POST /webhook/stripe): it verifies
// the Stripe-Signature header, canonicalizes the event into the platform
// envelope, invokes the private ingest function by ARN and maps its result
// to the HTTP status Stripe acts on.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/wire"
)

func main() {
	b := wire.NewBoot("webhook-stripe")
	cfg, err := wire.LoadStripeWebhookConfig(envconf.New())
	b.Check("invalid config", err)
	h, err := wire.NewStripeWebhook(b.Ctx, cfg, b.Clients(), b.Log)
	b.Check("handler", err)
	lambda.Start(h.Handle)
}
