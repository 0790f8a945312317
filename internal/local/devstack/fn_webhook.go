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

// LocalConnectAccount is the Stripe Connect account of the sample events
// (events/stripe/checkout.session.completed.json), and LocalConnectTenant
// its tenant in the local default map: without it the sample was answered
// 422 unknown_account, as a deployed stage answers an unmapped account.
const (
	LocalConnectAccount = "acct_1PqRsTBq2Lw7Xa1k"
	LocalConnectTenant  = "initech"
)

// stripeTenants is the tenant map webhook-stripe and jobs-worker read:
// STRIPE_TENANT_MAP, by default LocalTenant with the samples' Connect
// account mapped to LocalConnectTenant, its Connect accounts kept in the
// local SSM the way a deployed stage keeps them (the path in
// STRIPE_ACCOUNT_TENANTS_PATH) and read back by the same code. The signing
// secrets are the stack's STRIPE_WEBHOOK_SECRET setting (make boot-check
// runs the deployed binary against the kit's Secrets Manager instead).
func (s *Stack) stripeTenants(ctx context.Context) (map[string]string, error) {
	raw := s.Settings.String(webhookfn.EnvTenantMap, "")
	if raw == "" {
		raw = fmt.Sprintf(`{"default":%q,"accounts":{%q:%q}}`, LocalTenant, LocalConnectAccount, LocalConnectTenant)
	}
	res := map[string]string{webhookfn.EnvTenantMap: raw}
	var m webhook.TenantMap
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return res, nil // the function's Load names the variable
	}
	path, err := s.configMap(ctx, ssmparam.StripeAccountTenants, m.Accounts)
	if err != nil || path == "" {
		return res, err
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
