package ssmparam

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/siteswarm/eventplatform/internal/webhook"
)

// Tenants is a provider's tenant map with the accounts kept under path
// merged in and validated as the environment's map is (one call at cold
// start; none without a path). Every function that attributes a
// provider's events to tenants resolves its map here (the webhook
// functions, Stripe's EventBridge adapter, the reconcile job), so none
// links more than SSM for it.
func Tenants(ctx context.Context, client *ssm.Client, inline webhook.TenantMap, path string) (webhook.TenantMap, error) {
	accounts, err := Extend(ctx, client, inline.Accounts, path)
	if err != nil {
		return inline, fmt.Errorf("account map: %w", err)
	}
	inline.Accounts = accounts
	if err := inline.Validate(); err != nil {
		return inline, fmt.Errorf("%s: %w", path, err)
	}
	return inline, nil
}
