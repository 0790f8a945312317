// Command webhook-stripe is the public Stripe webhook adapter behind API
// Gateway (HTTP API, payload format 2.0, POST /webhook/stripe): it verifies
// the Stripe-Signature header, canonicalizes the event into the platform
// envelope, invokes the private ingest function by ARN and maps its result
// to the HTTP status Stripe acts on.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/logging"
	"github.com/siteswarm/eventplatform/internal/trace"
	"github.com/siteswarm/eventplatform/internal/wire"
)

func main() {
	ctx := context.Background()
	log := logging.Lambda("webhook-stripe")
	cfg, err := wire.LoadStripeWebhookConfig(envconf.New())
	if err != nil {
		fail(log, "invalid config", err)
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fail(log, "aws config", err)
	}
	trace.Instrument(&awsCfg) // AWS calls as X-Ray subsegments (active tracing)
	h, err := wire.NewStripeWebhook(ctx, cfg, wire.NewClients(awsCfg), log)
	if err != nil {
		fail(log, "handler", err)
	}
	lambda.Start(h.Handle)
}

func fail(log *slog.Logger, msg string, err error) {
	log.Error("webhook-stripe: cold start failed: "+msg, "error", err)
	os.Exit(1)
}
