package webhookfn

import (
	"context"
	"net/http"

	"github.com/siteswarm/eventplatform/internal/wire"
)

// Path is the route Stripe posts to (as API Gateway and the local stack
// serve it).
const Path = "/webhook/stripe"

// Function is webhook-stripe's descriptor: public, behind POST Path.
var Function = wire.Function{
	Name:        Name,
	Binary:      Name,
	ID:          "WebhookStripe",
	Description: "Stripe webhook adapter: verify signature, canonicalize, invoke ingest",
	MemoryMB:    256,
	Timeout:     FunctionTimeout,
	Services:    []string{"lambda", "secretsmanager", "ssm"},
	Routes: []wire.Route{{Method: http.MethodPost, Path: Path,
		Authz: "Stripe cannot authenticate to API Gateway: every delivery is authenticated by the function, which verifies the Stripe-Signature HMAC (constant-time, 300 s tolerance) before doing anything else. The stage is throttled."}},
	Wiring: wire.Wire(wire.IgnoreTopology(Load), NewClients, func(ctx context.Context, c Config, cl Clients, rt wire.Runtime) (any, error) {
		h, err := New(ctx, c, cl, rt)
		if err != nil {
			return nil, err
		}
		return h.Handle, nil
	}),
}
