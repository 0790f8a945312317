package devstack

import (
	"context"
	"fmt"
	"strings"

	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/wire"
)

func init() { register("webhook-stripe", webhookStripeFunction) }

// StripeWebhookPath is the local Stripe webhook route (as in API Gateway).
const StripeWebhookPath = "/webhook/stripe"

// LocalTenant is the default tenant of local Stripe events when
// STRIPE_TENANT_MAP is unset, so `stripe trigger …` events (which carry no
// tenant metadata) are accepted locally. Deployed stages have no default
// unless configured.
const LocalTenant = "local"

// StripeWebhookSettings are the webhook-stripe settings of the local stack:
// ingest is invoked by name through the stack's own Lambda Invoke endpoint
// and the signing secrets come from STRIPE_WEBHOOK_SECRET (Secrets Manager
// is not emulated); the tunables may be overridden from the environment
// exactly as on Lambda.
func (s *Stack) StripeWebhookSettings() map[string]string {
	settings := map[string]string{
		wire.EnvIngestFunction:      "ingest",
		wire.EnvStripeWebhookSecret: strings.Join(s.StripeSecrets(), ","),
		wire.EnvStripeTenantMap:     fmt.Sprintf(`{"default":%q}`, LocalTenant),
	}
	for _, k := range []string{wire.EnvStripeTenantMap, wire.EnvIngestTimeout, wire.EnvWebhookRetryAfter, wire.EnvStripeSecretRefresh} {
		if v := s.Settings.String(k, ""); v != "" {
			settings[k] = v
		}
	}
	return settings
}

func webhookStripeFunction(ctx context.Context, s *Stack) ([]Function, error) {
	cfg, err := wire.LoadStripeWebhookConfig(envconf.FromMap(s.StripeWebhookSettings()))
	if err != nil {
		return nil, fmt.Errorf("webhook-stripe config: %w", err)
	}
	h, err := wire.NewStripeWebhook(ctx, cfg, s.Clients, s.Log.With("function", "webhook-stripe"))
	if err != nil {
		return nil, err
	}
	return []Function{{
		Name:    "webhook-stripe",
		Handler: h.Handle,
		Timeout: wire.WebhookFunctionTimeout,
		// ANY, as the API Gateway route: the handler itself answers a
		// non-POST with 405 and an error body.
		Triggers: []lambdalocal.Trigger{lambdalocal.HTTPRoute{Method: "ANY", Path: StripeWebhookPath}},
	}}, nil
}
