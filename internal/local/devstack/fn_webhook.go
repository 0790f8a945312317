package devstack

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/siteswarm/eventplatform/internal/aws/ssmparam"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

func init() {
	locals[webhookfn.Name] = local{env: func(ctx context.Context, s *Stack) (map[string]string, error) { return s.stripeTenants(ctx) }}
}

// StripeWebhookPath is the local Stripe webhook route (its descriptor's,
// as API Gateway serves it).
const StripeWebhookPath = webhookfn.Path

// LocalTenant is the default tenant of local Stripe events when
// STRIPE_TENANT_MAP is unset, so `stripe trigger …` events (which carry no
// tenant metadata) are accepted locally. Deployed stages have no default
// unless configured.
const LocalTenant = "local"

// stripeTenants is the tenant map webhook-stripe and jobs-worker read:
// LocalTenant as the default unless STRIPE_TENANT_MAP is set, and a set
// map's Connect accounts kept in the local SSM the way a deployed stage
// keeps them (its path in STRIPE_ACCOUNT_TENANTS_PATH), read back by the
// same code. The signing secrets are the stack's STRIPE_WEBHOOK_SECRET
// setting (make boot-check runs the deployed binary against the kit's
// Secrets Manager instead).
func (s *Stack) stripeTenants(ctx context.Context) (map[string]string, error) {
	raw := s.Settings.String(webhookfn.EnvTenantMap, "")
	if raw == "" {
		return map[string]string{webhookfn.EnvTenantMap: fmt.Sprintf(`{"default":%q}`, LocalTenant)}, nil
	}
	var m webhook.TenantMap
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, nil // the function's Load names the variable
	}
	path, err := s.configMap(ctx, ssmparam.StripeAccountTenants, m.Accounts)
	if err != nil || path == "" {
		return nil, err
	}
	m.Accounts = nil
	return map[string]string{webhookfn.EnvTenantMap: jsonOf(m), webhookfn.EnvAccountTenantsPath: path}, nil
}

// configMap keeps a stage map in the local SSM the way a deployed stage
// keeps it (ssmparam chunks under /<prefix>/config/<name>) and returns its
// path; "" when there is nothing to keep or no local SSM (real endpoints:
// the map then stays in the function's environment).
func (s *Stack) configMap(ctx context.Context, name string, m map[string]string) (string, error) {
	if len(m) == 0 || s.Target != TargetEmulators || s.Clients.SSM == nil {
		return "", nil
	}
	path := ssmparam.Path("/"+s.Resources.Prefix, name)
	if err := ssmparam.Store(ctx, s.Clients.SSM, path, m); err != nil {
		return "", fmt.Errorf("devstack: %s: %w", name, err)
	}
	return path, nil
}
