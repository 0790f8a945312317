package devstack

import (
	"context"

	"github.com/siteswarm/eventplatform/internal/devapi"
	"github.com/siteswarm/eventplatform/internal/wire/stripeeventbridgefn"
)

// LocalStripeEventSource is the local stack's Stripe partner event source:
// the source of the EventBridge events it hands stripe-eventbridge
// (`evp stripe send --via eventbridge`), as a stage's rule would.
const LocalStripeEventSource = devapi.StripeEventSource

// stripe-eventbridge reads Stripe's tenant map, as webhook-stripe does
// (the same variables, the same local SSM parameters), so an event that
// arrives both ways resolves to the same tenant. Locally nothing but the
// Lambda Invoke API triggers it: the stack has no partner event bus.
func init() {
	locals[stripeeventbridgefn.Name] = local{env: func(ctx context.Context, s *Stack) (map[string]string, error) { return s.stripeTenants(ctx) }}
}
