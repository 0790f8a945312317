package wire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/invoke"
	"github.com/siteswarm/eventplatform/internal/metric"
	"github.com/siteswarm/eventplatform/internal/secret"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
)

// Environment variables of the webhook functions (the CDK app sets them;
// docs/webhooks.md documents them). Never rename one.
const (
	// EnvIngestFunction is the ingest function's ARN (a name works too,
	// as in the local stack).
	EnvIngestFunction = "INGEST_FUNCTION_ARN"
	// EnvIngestTimeout bounds one ingest invoke, e.g. "10s".
	EnvIngestTimeout = "INGEST_TIMEOUT"
	// EnvWebhookRetryAfter is the Retry-After of 503 answers, e.g. "60s".
	EnvWebhookRetryAfter = "WEBHOOK_RETRY_AFTER"

	// EnvStripeSecretARN is the ARN of the Secrets Manager secret holding a
	// JSON list of the active Stripe signing secrets (deployed stages).
	EnvStripeSecretARN = "STRIPE_WEBHOOK_SECRET_ARN"
	// EnvStripeWebhookSecret holds comma-separated signing secrets
	// directly: local development only, where Secrets Manager is not
	// emulated. Lambda environment variables are visible to anyone who may
	// read the function's configuration, so deployed stages use the ARN.
	EnvStripeWebhookSecret = "STRIPE_WEBHOOK_SECRET"
	// EnvStripeSecretRefresh is how often the cached secrets are re-read,
	// e.g. "5m".
	EnvStripeSecretRefresh = "STRIPE_WEBHOOK_SECRET_REFRESH"
	// EnvStripeTenantMap is the tenant mapping as JSON:
	// {"accounts":{"acct_…":"tenant"},"default":"tenant"} (both optional).
	EnvStripeTenantMap = "STRIPE_TENANT_MAP"
)

// Timeouts of a webhook function.
const (
	// WebhookFunctionTimeout is the Lambda timeout of a webhook function:
	// the ingest call (at most MaxIngestTimeout), a secret refresh (at most
	// secret.DefaultLoadTimeout) and margin, under API Gateway's
	// 30 s integration limit.
	WebhookFunctionTimeout = 20 * time.Second
	// MaxIngestTimeout is the largest accepted EnvIngestTimeout.
	MaxIngestTimeout = 15 * time.Second
)

// StripeWebhookConfig configures the webhook-stripe function.
type StripeWebhookConfig struct {
	IngestFunction string
	IngestTimeout  time.Duration
	RetryAfter     time.Duration
	// SecretARN (deployed) or Secrets (local): exactly one is set.
	SecretARN     string
	Secrets       []string
	SecretRefresh time.Duration
	Tenants       webhook.TenantMap
	// Stage is the metric dimension of a deployed webhook function.
	Stage string
}

// LoadStripeWebhookConfig reads the webhook-stripe config from the
// environment, applies defaults and validates it.
func LoadStripeWebhookConfig(r *envconf.Reader) (StripeWebhookConfig, error) {
	c := StripeWebhookConfig{
		IngestFunction: r.String(EnvIngestFunction, ""),
		IngestTimeout:  r.Duration(EnvIngestTimeout, invoke.DefaultTimeout),
		RetryAfter:     r.Duration(EnvWebhookRetryAfter, webhook.DefaultRetryAfter),
		SecretARN:      r.String(EnvStripeSecretARN, ""),
		Secrets:        r.List(EnvStripeWebhookSecret),
		SecretRefresh:  r.Duration(EnvStripeSecretRefresh, secret.DefaultRefresh),
		Stage:          r.String(EnvStage, ""),
	}
	r.JSON(EnvStripeTenantMap, &c.Tenants)
	if err := r.Err(); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// Validate checks the config is complete and coherent. Errors name
// variables, never secret values.
func (c StripeWebhookConfig) Validate() error {
	var errs []error
	if c.IngestFunction == "" {
		errs = append(errs, fmt.Errorf("%s is required", EnvIngestFunction))
	}
	if c.IngestTimeout < time.Second || c.IngestTimeout > MaxIngestTimeout {
		errs = append(errs, fmt.Errorf("%s must be 1s..%s (API Gateway gives up after 30s)", EnvIngestTimeout, MaxIngestTimeout))
	}
	if c.RetryAfter < time.Second || c.RetryAfter > time.Hour {
		errs = append(errs, fmt.Errorf("%s must be 1s..1h", EnvWebhookRetryAfter))
	}
	switch {
	case c.SecretARN == "" && len(c.Secrets) == 0:
		errs = append(errs, fmt.Errorf("%s (or, locally, %s) is required", EnvStripeSecretARN, EnvStripeWebhookSecret))
	case c.SecretARN != "" && len(c.Secrets) > 0:
		errs = append(errs, fmt.Errorf("set %s or %s, not both", EnvStripeSecretARN, EnvStripeWebhookSecret))
	case len(c.Secrets) > 0:
		if err := stripe.CheckSecrets(c.Secrets); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", EnvStripeWebhookSecret, err))
		}
	}
	if c.SecretRefresh < time.Minute || c.SecretRefresh > time.Hour {
		errs = append(errs, fmt.Errorf("%s must be 1m..1h", EnvStripeSecretRefresh))
	}
	if err := c.Tenants.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", EnvStripeTenantMap, err))
	}
	return errors.Join(errs...)
}

var (
	_ webhook.Ingester = (*invoke.Ingest)(nil)
	_ secret.Store     = (*secret.Manager)(nil)
	_ secret.Store     = secret.List(nil)
	_ stripe.Secrets   = (*secret.Keyring)(nil)
)

// NewStripeWebhook builds the webhook-stripe handler. It reads the signing
// secrets once (failing the cold start if they cannot be read) and caches
// them; deliveries refresh the cache every SecretRefresh.
func NewStripeWebhook(ctx context.Context, c StripeWebhookConfig, cl Clients, log *slog.Logger) (*webhook.Handler, error) {
	var store secret.Store = secret.List(c.Secrets)
	if c.SecretARN != "" {
		if cl.SecretsManager == nil {
			return nil, errors.New("webhook-stripe: a Secrets Manager client is required for " + EnvStripeSecretARN)
		}
		sm := &secret.Manager{Client: cl.SecretsManager, SecretID: c.SecretARN}
		store = secret.StoreFunc(func(ctx context.Context) ([]string, error) {
			secrets, err := sm.Load(ctx)
			if err != nil {
				return nil, err
			}
			return secrets, stripe.CheckSecrets(secrets)
		})
	}
	if cl.Lambda == nil {
		return nil, errors.New("webhook-stripe: a Lambda client is required to invoke ingest")
	}
	keys, err := secret.NewKeyring(ctx, store, secret.KeyringOptions{Refresh: c.SecretRefresh, Log: log})
	if err != nil {
		return nil, fmt.Errorf("webhook-stripe: %w", err)
	}
	return &webhook.Handler{
		Provider:   stripe.New(keys, c.Tenants, log),
		Ingest:     &invoke.Ingest{Client: cl.Lambda, Function: c.IngestFunction, Timeout: c.IngestTimeout},
		RetryAfter: c.RetryAfter,
		Log:        log,
		Metrics:    metric.ForStage(c.Stage),
	}, nil
}
