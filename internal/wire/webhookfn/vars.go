package webhookfn

import (
	"strings"

	"github.com/siteswarm/eventplatform/internal/webhook"
)

// Vars are the environment variables of one provider's function, named
// after the provider (Stripe's: STRIPE_WEBHOOK_SECRET_ARN, …). Never
// rename one.
type Vars struct {
	// SecretARN is the Secrets Manager secret holding the active secrets
	// (deployed stages); Secret holds comma-separated secrets directly
	// (local development only, see wire.SecretSource); SecretRefresh is how
	// often the cached secrets are re-read, e.g. "5m".
	SecretARN, Secret, SecretRefresh string
	// TenantMap is the tenant mapping as JSON:
	// {"accounts":{"…":"tenant"},"default":"tenant"} (both optional).
	TenantMap string
	// AccountTenantsPath is the SSM path under which the deployed stage
	// keeps the provider's account → tenant map (ssmparam: too large for
	// the environment beyond a few dozen accounts), merged into the map's
	// accounts at cold start. AccountTenantsVersion changes with the map,
	// so a deploy that changes it replaces the function's instances.
	AccountTenantsPath, AccountTenantsVersion string
}

// VarsOf are d's variables: its name in capitals, then
// _WEBHOOK_SECRET_ARN, _WEBHOOK_SECRET, _WEBHOOK_SECRET_REFRESH,
// _TENANT_MAP, _ACCOUNT_TENANTS_PATH, _ACCOUNT_TENANTS_VERSION.
func VarsOf(d webhook.Declaration) Vars {
	p := strings.ToUpper(d.Name)
	return Vars{
		SecretARN: p + "_WEBHOOK_SECRET_ARN", Secret: p + "_WEBHOOK_SECRET", SecretRefresh: p + "_WEBHOOK_SECRET_REFRESH",
		TenantMap: p + "_TENANT_MAP", AccountTenantsPath: p + "_ACCOUNT_TENANTS_PATH", AccountTenantsVersion: p + "_ACCOUNT_TENANTS_VERSION",
	}
}
