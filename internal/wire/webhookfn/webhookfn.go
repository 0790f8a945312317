// Package webhookfn wires a webhook provider's function (webhook-<name>,
// one per provider of webhook/providers: For): environment → Config, the
// Lambda client (to invoke ingest) and, on deployed stages, the Secrets
// Manager client (signing secrets) and SSM (the account → tenant map), the
// provider's verifier behind the webhook handler. Its Stripe names
// (Function, Path, the Env* constants) are Stripe's declaration's.
package webhookfn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/siteswarm/eventplatform/internal/aws/lambdainvoke"
	"github.com/siteswarm/eventplatform/internal/aws/smsecret"
	"github.com/siteswarm/eventplatform/internal/aws/ssmparam"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/secret"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	"github.com/siteswarm/eventplatform/internal/wire"
)

// Name is Stripe's function's name.
const Name = "webhook-stripe"

// Environment variables of webhook-stripe (docs/webhooks.md): every
// provider's function reads the same with its own prefix (VarsOf). Never
// rename one.
const (
	// EnvIngestFunction and EnvIngestTimeout: see package wire.
	EnvIngestFunction = wire.EnvIngestFunction
	EnvIngestTimeout  = wire.EnvIngestTimeout
	// EnvRetryAfter is the Retry-After of 503 answers, e.g. "60s".
	EnvRetryAfter = "WEBHOOK_RETRY_AFTER"
	// EnvSecretARN is the Secrets Manager secret holding a JSON list of the
	// active Stripe signing secrets (deployed stages).
	EnvSecretARN = "STRIPE_WEBHOOK_SECRET_ARN"
	// EnvSecret holds comma-separated signing secrets directly: local
	// development only (see wire.SecretSource).
	EnvSecret = "STRIPE_WEBHOOK_SECRET"
	// EnvSecretRefresh is how often the cached secrets are re-read, e.g.
	// "5m".
	EnvSecretRefresh = "STRIPE_WEBHOOK_SECRET_REFRESH"
	// EnvTenantMap is the tenant mapping as JSON:
	// {"accounts":{"acct_…":"tenant"},"default":"tenant"} (both optional).
	EnvTenantMap = "STRIPE_TENANT_MAP"
	// EnvAccountTenantsPath is the SSM path under which the deployed stage
	// keeps its Connect account → tenant map (ssmparam: too large for the
	// environment beyond a few dozen accounts), merged into the map's
	// accounts at cold start. EnvAccountTenantsVersion changes with the map,
	// so a deploy that changes it replaces the function's instances.
	EnvAccountTenantsPath    = "STRIPE_ACCOUNT_TENANTS_PATH"
	EnvAccountTenantsVersion = "STRIPE_ACCOUNT_TENANTS_VERSION"
)

const (
	// FunctionTimeout is the Lambda timeout: the ingest call (at most
	// MaxIngestTimeout), a secret refresh (at most
	// secret.DefaultLoadTimeout) and margin, under API Gateway's 30 s
	// integration limit.
	FunctionTimeout = 20 * time.Second
	// MaxIngestTimeout is the largest accepted EnvIngestTimeout.
	MaxIngestTimeout = 15 * time.Second
)

// Config is a webhook provider's function's configuration.
type Config struct {
	// Provider is the declaration the function serves.
	Provider       webhook.Declaration
	Webhook        webhook.Config
	IngestFunction string
	IngestTimeout  time.Duration
	Secrets        wire.SecretSource
	Tenants        webhook.TenantMap
	// AccountTenantsPath, when set, adds the accounts kept in SSM.
	AccountTenantsPath string
}

// Load reads webhook-stripe's config (LoadProvider of Stripe's
// declaration).
func Load(r *envconf.Reader) (Config, error) { return LoadProvider(stripe.Declaration, r) }

// LoadProvider reads d's function's config from the environment (its
// variables, VarsOf) and validates it. Errors never quote a secret.
func LoadProvider(d webhook.Declaration, r *envconf.Reader) (Config, error) {
	v := VarsOf(d)
	c := Config{
		Provider:       d,
		Webhook:        webhook.Config{RetryAfter: r.Duration(EnvRetryAfter, 0)}.WithDefaults(),
		IngestFunction: wire.Required(r, EnvIngestFunction, ""),
		IngestTimeout:  r.Duration(EnvIngestTimeout, lambdainvoke.DefaultTimeout),
		Secrets:        wire.LoadSecretSource(r, v.SecretARN, v.Secret, v.SecretRefresh, d.CheckSecrets),
	}
	r.JSON(v.TenantMap, &c.Tenants)
	c.AccountTenantsPath = r.String(v.AccountTenantsPath, "")
	if c.IngestTimeout < time.Second || c.IngestTimeout > MaxIngestTimeout {
		r.Fail(fmt.Errorf("%s must be 1s..%s (API Gateway gives up after 30s)", EnvIngestTimeout, MaxIngestTimeout))
	}
	if err := r.Err(); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// Validate checks the config with the components' own checks.
func (c Config) Validate() error {
	return errors.Join(
		wire.FromVars(c.Webhook.Validate(), EnvRetryAfter),
		wire.FromVars(c.Tenants.Validate(), VarsOf(c.Provider).TenantMap),
	)
}

// Clients are the AWS services a webhook function calls; SecretsManager may be
// nil where secrets come from the environment (the local stack).
type Clients struct {
	Lambda         *lambda.Client
	SecretsManager *secretsmanager.Client
	// SSM reads the account map (nil when the stage keeps none there).
	SSM *ssm.Client
}

// NewClients builds them from one aws.Config.
func NewClients(cfg aws.Config) Clients {
	return Clients{Lambda: lambda.NewFromConfig(cfg), SecretsManager: secretsmanager.NewFromConfig(cfg), SSM: ssm.NewFromConfig(cfg)}
}

// New builds the handler. It reads the signing secrets once (failing the
// cold start if they cannot be read) and caches them; deliveries refresh
// the cache every Keyring.Refresh. A provider with sources reads one
// secret holding every source's list (secret.ParseSources); locally its
// variable lists the local source's secrets.
func New(ctx context.Context, c Config, cl Clients, rt wire.Runtime) (*webhook.Handler, error) {
	rt = rt.WithDefaults()
	d := c.Provider
	name := FunctionName(d)
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	src, fromARN := c.Secrets, smsecret.FromARN(cl.SecretsManager)
	if d.Sources {
		src, fromARN = bySource(d, src), smsecret.FromARNBySource(cl.SecretsManager)
	}
	keys, err := src.OpenKeyring(ctx, fromARN, rt.Log)
	if err != nil {
		return nil, fmt.Errorf("%s: signing secrets: %w", name, err)
	}
	if cl.Lambda == nil {
		return nil, fmt.Errorf("%s: a Lambda client is required to invoke ingest", name)
	}
	tenants, err := ResolveTenants(ctx, c.Tenants, cl.SSM, c.AccountTenantsPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	setup := webhook.Setup{Secrets: keys, Tenants: tenants, Log: rt.Log}
	if d.Sources {
		setup.Source = func(source string) (webhook.Secrets, bool) {
			s := secret.Source{Keys: keys, Name: source}
			return s, s.Has(context.Background())
		}
	}
	provider, err := d.New(setup)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return webhook.New(c.Webhook, webhook.Deps{
		Provider: provider,
		Ingest:   &lambdainvoke.Ingest{Client: cl.Lambda, Function: c.IngestFunction, Timeout: c.IngestTimeout},
		Log:      rt.Log,
		Metrics:  rt.Metrics,
	})
}

// bySource is a provider with sources' secret source: a local list is the
// local source's (tagged with its name), and every load is checked source
// by source with the provider's check.
func bySource(d webhook.Declaration, src wire.SecretSource) wire.SecretSource {
	tagged := make([]string, len(src.List))
	for i, s := range src.List {
		tagged[i] = secret.Tag(d.LocalSource, s)
	}
	src.List = tagged
	src.Check = func(entries []string) error {
		sets := map[string][]string{}
		var order []string
		for _, e := range entries {
			source, s, ok := secret.Untag(e)
			if !ok {
				return errors.New("a secret without its source")
			}
			if !webhook.ValidSourceName(source) {
				return fmt.Errorf("source %q is not a name (%s)", source, webhook.SourceNamePattern)
			}
			if _, seen := sets[source]; !seen {
				order = append(order, source)
			}
			sets[source] = append(sets[source], s)
		}
		for _, source := range order {
			if err := d.CheckSecrets(sets[source]); err != nil {
				return fmt.Errorf("source %q: %w", source, err)
			}
		}
		return nil
	}
	return src
}

// ResolveTenants is the tenant map with the accounts kept under path (SSM)
// merged in and validated as the environment's map is (ssmparam.Tenants:
// one call at cold start; none without a path).
func ResolveTenants(ctx context.Context, inline webhook.TenantMap, client *ssm.Client, path string) (webhook.TenantMap, error) {
	return ssmparam.Tenants(ctx, client, inline, path)
}
