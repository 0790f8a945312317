package webhookfn_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/lambdainvoke"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/secret"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/providers"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	c, err := webhookfn.Load(envconf.FromMap(map[string]string{
		webhookfn.EnvIngestFunction: "arn:aws:lambda:eu-west-1:123456789012:function:evp-prod-ingest",
		webhookfn.EnvSecretARN:      "arn:aws:secretsmanager:eu-west-1:123456789012:secret:evp-prod/stripe-webhook-AbCdEf",
		webhookfn.EnvTenantMap:      `{"accounts":{"acct_1":"acme"},"default":"globex"}`,
	}))
	require.NoError(t, err)
	require.Equal(t, lambdainvoke.DefaultTimeout, c.IngestTimeout)
	require.Equal(t, webhook.DefaultRetryAfter, c.Webhook.RetryAfter)
	require.Equal(t, secret.DefaultRefresh, c.Secrets.Keyring.Refresh)
	require.Equal(t, webhook.TenantMap{Accounts: map[string]string{"acct_1": "acme"}, Default: "globex"}, c.Tenants)
	require.Empty(t, c.Secrets.List)
	require.Less(t, c.IngestTimeout+secret.DefaultLoadTimeout, webhookfn.FunctionTimeout)
	require.Less(t, webhookfn.FunctionTimeout, 30*time.Second, "under API Gateway's integration limit")

	c, err = webhookfn.Load(envconf.FromMap(map[string]string{
		webhookfn.EnvIngestFunction: "ingest",
		webhookfn.EnvSecret:         " whsec_new , whsec_old ,",
		webhookfn.EnvIngestTimeout:  "5s",
	}))
	require.NoError(t, err)
	require.Equal(t, []string{"whsec_new", "whsec_old"}, c.Secrets.List)
	require.Equal(t, 5*time.Second, c.IngestTimeout)
	require.Equal(t, webhook.TenantMap{}, c.Tenants, "no default tenant unless configured")
}

func TestLoadRejects(t *testing.T) {
	t.Parallel()
	base := func() map[string]string {
		return map[string]string{webhookfn.EnvIngestFunction: "ingest", webhookfn.EnvSecret: "whsec_a"}
	}
	for name, tc := range map[string]struct {
		mut  func(m map[string]string)
		want string
	}{
		"no ingest function":      {func(m map[string]string) { delete(m, webhookfn.EnvIngestFunction) }, webhookfn.EnvIngestFunction},
		"no secret":               {func(m map[string]string) { delete(m, webhookfn.EnvSecret) }, webhookfn.EnvSecretARN},
		"both secret sources":     {func(m map[string]string) { m[webhookfn.EnvSecretARN] = "arn:aws:secretsmanager:eu-west-1:1:secret:x" }, "not both"},
		"not a signing secret":    {func(m map[string]string) { m[webhookfn.EnvSecret] = "whsec_a,sk_live_123" }, "#2"},
		"ingest timeout too long": {func(m map[string]string) { m[webhookfn.EnvIngestTimeout] = "29s" }, webhookfn.EnvIngestTimeout},
		"ingest timeout garbage":  {func(m map[string]string) { m[webhookfn.EnvIngestTimeout] = "soon" }, webhookfn.EnvIngestTimeout},
		"refresh too short":       {func(m map[string]string) { m[webhookfn.EnvSecretRefresh] = "1s" }, webhookfn.EnvSecretRefresh + ": secret: refresh 1s must be 1m..1h"},
		"retry-after too long":    {func(m map[string]string) { m[webhookfn.EnvRetryAfter] = "3h" }, webhookfn.EnvRetryAfter},
		"tenant map not json":     {func(m map[string]string) { m[webhookfn.EnvTenantMap] = "acme" }, webhookfn.EnvTenantMap},
		"tenant map bad tenant":   {func(m map[string]string) { m[webhookfn.EnvTenantMap] = `{"default":"ACME"}` }, webhookfn.EnvTenantMap},
	} {
		m := base()
		tc.mut(m)
		_, err := webhookfn.Load(envconf.FromMap(m))
		require.ErrorContains(t, err, tc.want, name)
		require.NotContains(t, err.Error(), "sk_live_123", "config errors never quote a secret")
	}
}

func TestNewNeedsItsClients(t *testing.T) {
	t.Parallel()
	c, err := webhookfn.Load(envconf.FromMap(map[string]string{
		webhookfn.EnvIngestFunction: "ingest", webhookfn.EnvSecretARN: "arn:aws:secretsmanager:eu-west-1:1:secret:x",
	}))
	require.NoError(t, err)
	_, err = webhookfn.New(context.Background(), c, webhookfn.Clients{}, wire.Runtime{})
	require.ErrorContains(t, err, "no Secrets Manager client")

	c, err = webhookfn.Load(envconf.FromMap(map[string]string{webhookfn.EnvIngestFunction: "ingest", webhookfn.EnvSecret: "whsec_a"}))
	require.NoError(t, err)
	_, err = webhookfn.New(context.Background(), c, webhookfn.Clients{}, wire.Runtime{})
	require.ErrorContains(t, err, "Lambda client")
}

// Every provider's function is a view of its declaration: its route, its
// secret's variables and outputs, and a handler built from the local
// secret and tenant map its variables hold (a provider with sources from
// its local source's secret).
func TestEveryProviderIsAFunction(t *testing.T) {
	t.Parallel()
	for _, d := range providers.All() {
		fn := webhookfn.For(d)
		v := webhookfn.VarsOf(d)
		require.NoError(t, fn.Validate())
		require.Equal(t, "webhook-"+d.Name, fn.Name)
		require.Equal(t, d.Name, fn.Provider)
		require.Equal(t, []string{"POST " + d.Path()}, []string{fn.Routes[0].Key()})
		require.Equal(t, v.SecretARN, fn.Secrets[0].EnvARN)
		require.Equal(t, v.Secret, fn.Secrets[0].Env)
		require.Contains(t, fn.Environment(topology.Default()), v.TenantMap, "%s reads its own tenant map", d.Name)

		tenants, err := json.Marshal(d.Local.Tenants)
		require.NoError(t, err)
		conf, err := fn.Wiring.Load(envconf.FromMap(map[string]string{
			webhookfn.EnvIngestFunction: "ingest", v.Secret: d.Local.Secret, v.TenantMap: string(tenants),
		}), topology.Default())
		require.NoError(t, err, d.Name)
		h, err := fn.Wiring.Build(context.Background(), conf, wire.ClientSource{Config: aws.Config{Region: "eu-west-1"}}, wire.Runtime{})
		require.NoError(t, err, d.Name)
		require.NotNil(t, h)

		if d.CheckSecrets([]string{"sk_live_123"}) != nil { // a provider whose secrets have a shape
			_, err = fn.Wiring.Load(envconf.FromMap(map[string]string{webhookfn.EnvIngestFunction: "ingest", v.Secret: "sk_live_123"}), topology.Default())
			require.ErrorContains(t, err, v.Secret, "%s refuses what is not its secret", d.Name)
			require.NotContains(t, err.Error(), "sk_live_123")
		}
	}
	require.Equal(t, webhookfn.Function.Name, webhookfn.Name)
	require.Equal(t, webhookfn.VarsOf(stripe.Declaration), webhookfn.Vars{
		SecretARN: webhookfn.EnvSecretARN, Secret: webhookfn.EnvSecret, SecretRefresh: webhookfn.EnvSecretRefresh,
		TenantMap: webhookfn.EnvTenantMap, AccountTenantsPath: webhookfn.EnvAccountTenantsPath, AccountTenantsVersion: webhookfn.EnvAccountTenantsVersion,
	}, "Stripe's variables keep their names")
}
