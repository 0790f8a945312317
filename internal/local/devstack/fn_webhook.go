package devstack

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/siteswarm/eventplatform/internal/aws/ssmparam"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/providers"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

// Every provider's function (webhookfn.For) gets its tenant map, and its
// accounts kept in the local SSM as a stage keeps them; its signing
// secrets are the stack's <NAME>_WEBHOOK_SECRET setting (Defaults).
func init() {
	for _, d := range providers.All() {
		locals[webhookfn.FunctionName(d)] = local{env: func(ctx context.Context, s *Stack) (map[string]string, error) { return s.providerTenants(ctx, d) }}
	}
}

// WebhookPath is a provider's local route for a delivery (its
// descriptor's path, with the local source for a provider with sources).
func WebhookPath(d webhook.Declaration) string { return d.URLPath(d.LocalSource) }

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

// stripeTenants is the tenant map webhook-stripe and jobs-worker read
// (providerTenants of Stripe).
func (s *Stack) stripeTenants(ctx context.Context) (map[string]string, error) {
	return s.providerTenants(ctx, stripe.Declaration)
}

// providerTenants is the tenant map a provider's function reads: its
// <NAME>_TENANT_MAP setting, by default its declaration's local map
// (Stripe's: LocalTenant with the samples' Connect account mapped to
// LocalConnectTenant; GitHub's installation 1, Shopify's
// acme.myshopify.com and Standard Webhooks' source local to acme), its
// accounts kept in the local SSM the way a deployed stage keeps them (the
// path in <NAME>_ACCOUNT_TENANTS_PATH) and read back by the same code.
// The signing secrets are the stack's <NAME>_WEBHOOK_SECRET setting (make
// boot-check runs the deployed binary against the kit's Secrets Manager
// instead).
func (s *Stack) providerTenants(ctx context.Context, d webhook.Declaration) (map[string]string, error) {
	v := webhookfn.VarsOf(d)
	raw := s.Settings.String(v.TenantMap, "")
	if raw == "" {
		raw = jsonOf(d.Local.Tenants)
	}
	res := map[string]string{v.TenantMap: raw}
	var m webhook.TenantMap
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return res, nil // the function's Load names the variable
	}
	path, err := s.configMap(ctx, webhookfn.AccountTenants(d), m.Accounts)
	if err != nil || path == "" {
		return res, err
	}
	m.Accounts = nil
	return map[string]string{v.TenantMap: jsonOf(m), v.AccountTenantsPath: path}, nil
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
