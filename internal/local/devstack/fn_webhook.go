package devstack

import (
	"context"
	"fmt"

	"github.com/siteswarm/eventplatform/internal/aws/ssmparam"
	"github.com/siteswarm/eventplatform/internal/devapi"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/wire/ingestfn"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

func init() { register(webhookfn.Name, webhookStripeFunction) }

// StripeWebhookPath is the local Stripe webhook route (as in API Gateway).
const StripeWebhookPath = devapi.StripeWebhookPath

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

// StripeWebhookResources are the webhook-stripe settings the local stack
// decides: ingest is invoked by name through the stack's own Lambda Invoke
// endpoint, and the tenant map defaults to LocalTenant (and the samples'
// Connect account to LocalConnectTenant) unless STRIPE_TENANT_MAP is set. The signing secrets are the stack's
// STRIPE_WEBHOOK_SECRET setting (make boot-check runs the deployed binary
// against the kit's Secrets Manager instead).
func (s *Stack) StripeWebhookResources() map[string]string {
	res := map[string]string{webhookfn.EnvIngestFunction: ingestfn.Name}
	if s.Settings.String(webhookfn.EnvTenantMap, "") == "" {
		res[webhookfn.EnvTenantMap] = fmt.Sprintf(`{"default":%q,"accounts":{%q:%q}}`, LocalTenant, LocalConnectAccount, LocalConnectTenant)
	}
	return res
}

func webhookStripeFunction(ctx context.Context, s *Stack) ([]Function, error) {
	cfg, err := webhookfn.Load(s.env(s.StripeWebhookResources()))
	if err != nil {
		return nil, fmt.Errorf("webhook-stripe config: %w", err)
	}
	// Connect accounts are kept in the local SSM, as a deployed stage keeps
	// them, and read back by the same code.
	if cfg.AccountTenantsPath, err = s.configMap(ctx, ssmparam.StripeAccountTenants, cfg.Tenants.Accounts); err != nil {
		return nil, err
	}
	if cfg.AccountTenantsPath != "" {
		cfg.Tenants.Accounts = nil
	}
	h, err := webhookfn.New(coldStart(ctx, webhookfn.Name), cfg, webhookfn.Clients{Lambda: s.Clients.Lambda, SSM: s.Clients.SSM}, s.runtime(webhookfn.Name))
	if err != nil {
		return nil, err
	}
	return []Function{{
		Name:    webhookfn.Name,
		Handler: h.Handle,
		Timeout: webhookfn.FunctionTimeout,
		// ANY, as the API Gateway route: the handler itself answers a
		// non-POST with 405 and an error body.
		Triggers: []lambdalocal.Trigger{lambdalocal.HTTPRoute{Method: "ANY", Path: StripeWebhookPath}},
	}}, nil
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
