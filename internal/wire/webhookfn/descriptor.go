package webhookfn

import (
	"context"
	"net/http"

	"github.com/siteswarm/eventplatform/internal/wire"
)

// Path is the route Stripe posts to (as API Gateway and the local stack
// serve it).
const Path = "/webhook/stripe"

// Function is webhook-stripe's descriptor: public, behind POST Path (its
// URL published for Stripe's dashboard), with the signing secrets it reads.
var Function = wire.Function{
	Name:        Name,
	Binary:      Name,
	ID:          "WebhookStripe",
	Description: "Stripe webhook adapter: verify signature, canonicalize, invoke ingest",
	MemoryMB:    256,
	Timeout:     FunctionTimeout,
	Services:    []string{"lambda", "secretsmanager", "ssm"},
	Routes: []wire.Route{{Method: http.MethodPost, Path: Path,
		Authz:  "Stripe cannot authenticate to API Gateway: every delivery is authenticated by the function, which verifies the Stripe-Signature HMAC (constant-time, 300 s tolerance) before doing anything else. The stage is throttled.",
		Output: &wire.Output{ID: "WebhookStripeUrl", Param: "webhook-stripe-url", Description: "Stripe webhook endpoint URL (Stripe dashboard → Developers → Webhooks)"}}},
	Secrets: []wire.Secret{{
		ID: "StripeWebhookSecrets", EnvARN: EnvSecretARN, Env: EnvSecret,
		Description: `active Stripe endpoint signing secrets as a JSON list, e.g. ["whsec_…"]. ` +
			"Set it after the first deploy; list two during a rotation.",
		WhyNoRotation: "Stripe issues endpoint signing secrets in its dashboard; Secrets Manager cannot rotate them. Operators roll them with an overlap window (docs/deploy.md#rotation) and the webhook re-reads the list every few minutes.",
		Output:        &wire.Output{ID: "StripeWebhookSecret", Param: "stripe-webhook-secret", Description: "Secret to put the Stripe signing secrets in (JSON list)"},
	}},
	Wiring: wire.Wire(wire.IgnoreTopology(Load), NewClients, func(ctx context.Context, c Config, cl Clients, rt wire.Runtime) (any, error) {
		h, err := New(ctx, c, cl, rt)
		if err != nil {
			return nil, err
		}
		return h.Handle, nil
	}),
}
