package wire_test

import (
	"context"
	"testing"
	"time"

	"github.com/siteswarm/eventplatform/internal/secret"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/invoke"
	"github.com/siteswarm/eventplatform/internal/logging"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/wire"
)

func TestLoadStripeWebhookConfigDefaults(t *testing.T) {
	t.Parallel()
	c, err := wire.LoadStripeWebhookConfig(envconf.FromMap(map[string]string{
		wire.EnvIngestFunction:  "arn:aws:lambda:eu-west-1:123456789012:function:evp-prod-ingest",
		wire.EnvStripeSecretARN: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:evp-prod/stripe-webhook-AbCdEf",
		wire.EnvStripeTenantMap: `{"accounts":{"acct_1":"acme"},"default":"globex"}`,
	}))
	require.NoError(t, err)
	require.Equal(t, invoke.DefaultTimeout, c.IngestTimeout)
	require.Equal(t, webhook.DefaultRetryAfter, c.RetryAfter)
	require.Equal(t, secret.DefaultRefresh, c.SecretRefresh)
	require.Equal(t, webhook.TenantMap{Accounts: map[string]string{"acct_1": "acme"}, Default: "globex"}, c.Tenants)
	require.Empty(t, c.Secrets)
	require.Less(t, c.IngestTimeout+secret.DefaultLoadTimeout, wire.WebhookFunctionTimeout)
	require.Less(t, wire.WebhookFunctionTimeout, 30*time.Second, "under API Gateway's integration limit")

	c, err = wire.LoadStripeWebhookConfig(envconf.FromMap(map[string]string{
		wire.EnvIngestFunction:      "ingest",
		wire.EnvStripeWebhookSecret: " whsec_new , whsec_old ,",
		wire.EnvIngestTimeout:       "5s",
	}))
	require.NoError(t, err)
	require.Equal(t, []string{"whsec_new", "whsec_old"}, c.Secrets)
	require.Equal(t, 5*time.Second, c.IngestTimeout)
	require.Equal(t, webhook.TenantMap{}, c.Tenants, "no default tenant unless configured")
}

func TestLoadStripeWebhookConfigRejects(t *testing.T) {
	t.Parallel()
	base := func() map[string]string {
		return map[string]string{wire.EnvIngestFunction: "ingest", wire.EnvStripeWebhookSecret: "whsec_a"}
	}
	cases := map[string]struct {
		mut  func(m map[string]string)
		want string
	}{
		"no ingest function": {func(m map[string]string) { delete(m, wire.EnvIngestFunction) }, wire.EnvIngestFunction},
		"no secret":          {func(m map[string]string) { delete(m, wire.EnvStripeWebhookSecret) }, wire.EnvStripeSecretARN},
		"both secret sources": {func(m map[string]string) {
			m[wire.EnvStripeSecretARN] = "arn:aws:secretsmanager:eu-west-1:1:secret:x"
		}, "not both"},
		"not a signing secret":    {func(m map[string]string) { m[wire.EnvStripeWebhookSecret] = "whsec_a,sk_live_123" }, "#2"},
		"ingest timeout too long": {func(m map[string]string) { m[wire.EnvIngestTimeout] = "29s" }, wire.EnvIngestTimeout},
		"ingest timeout garbage":  {func(m map[string]string) { m[wire.EnvIngestTimeout] = "soon" }, wire.EnvIngestTimeout},
		"refresh too short":       {func(m map[string]string) { m[wire.EnvStripeSecretRefresh] = "1s" }, wire.EnvStripeSecretRefresh},
		"retry-after too long":    {func(m map[string]string) { m[wire.EnvWebhookRetryAfter] = "3h" }, wire.EnvWebhookRetryAfter},
		"tenant map not json":     {func(m map[string]string) { m[wire.EnvStripeTenantMap] = "acme" }, wire.EnvStripeTenantMap},
		"tenant map bad tenant":   {func(m map[string]string) { m[wire.EnvStripeTenantMap] = `{"default":"ACME"}` }, wire.EnvStripeTenantMap},
	}
	for name, tc := range cases {
		m := base()
		tc.mut(m)
		_, err := wire.LoadStripeWebhookConfig(envconf.FromMap(m))
		require.ErrorContains(t, err, tc.want, name)
		require.NotContains(t, err.Error(), "sk_live_123", "config errors never quote a secret")
	}
}

func TestNewStripeWebhookNeedsItsClients(t *testing.T) {
	t.Parallel()
	c, err := wire.LoadStripeWebhookConfig(envconf.FromMap(map[string]string{
		wire.EnvIngestFunction: "ingest", wire.EnvStripeSecretARN: "arn:aws:secretsmanager:eu-west-1:1:secret:x",
	}))
	require.NoError(t, err)
	_, err = wire.NewStripeWebhook(context.Background(), c, wire.Clients{}, logging.Discard())
	require.ErrorContains(t, err, "Secrets Manager client")
}
