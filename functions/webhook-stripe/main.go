// Command webhook-stripe is the public Stripe webhook adapter behind API
// Gateway (HTTP API, payload format 2.0, POST /webhook/stripe): it verifies
// the Stripe-Signature header, canonicalizes the event into the platform
// envelope, invokes the private ingest function by ARN and maps its result
// to the HTTP status Stripe acts on.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

func main() {
	b := wire.NewBoot(webhookfn.Name)
	cfg, err := webhookfn.Load(b.Env)
	b.Check("invalid config", err)
	h, err := webhookfn.New(b.Ctx, cfg, webhookfn.NewClients(b.AWSConfig()), b.Runtime())
	b.Check("build", err)
	lambda.Start(h.Handle)
}
