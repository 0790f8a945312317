package stripeeventbridgefn

import (
	"context"

	"github.com/siteswarm/eventplatform/internal/wire"
)

// Function is stripe-eventbridge's descriptor. Its trigger is not a
// schedule, a route or a queue of the platform but the rule on the
// stage's Stripe partner event bus, which the CDK app creates only when
// the stage names the partner event source (stripeEventBridgeSource): a
// stage without it deploys no function (nothing could invoke it).
var Function = wire.Function{
	Name:        Name,
	Binary:      Name,
	ID:          "StripeEventBridge",
	Description: "Stripe EventBridge adapter: canonicalize the partner bus's Stripe events as the webhook does, invoke ingest",
	MemoryMB:    256,
	Timeout:     FunctionTimeout,
	Services:    []string{"lambda", "ssm"},
	Wiring: wire.Wire(wire.IgnoreTopology(Load), NewClients, func(ctx context.Context, c Config, cl Clients, rt wire.Runtime) (any, error) {
		h, err := New(ctx, c, cl, rt)
		if err != nil {
			return nil, err
		}
		return h.Handle, nil
	}),
}
