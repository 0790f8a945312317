package stripeeventbridgefn

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/siteswarm/eventplatform/internal/aws/lambdainvoke"
	"github.com/siteswarm/eventplatform/internal/aws/ssmparam"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	"github.com/siteswarm/eventplatform/internal/wire"
)

// Name is the function's name (deployed evp-<stage>-stripe-eventbridge).
const Name = "stripe-eventbridge"

// DLQName is the DLQ of the stage of prefix (evp-<stage>): what the rule
// cannot deliver and what the function's asynchronous invocation gives up
// on (`evp stripe redrive-eventbridge` drains it).
func DLQName(prefix string) string { return prefix + "-" + Name + "-dlq" }

// Environment variables: ingest's (package wire) and Stripe's tenant map,
// the same names webhook-stripe reads (webhookfn.VarsOf of Stripe's
// declaration; a test holds them equal), so the stage's Stripe tenant
// settings reach both. Never rename one.
const (
	EnvIngestFunction = wire.EnvIngestFunction
	EnvIngestTimeout  = wire.EnvIngestTimeout
	// EnvTenantMap is the tenant mapping as JSON:
	// {"accounts":{"acct_…":"tenant"},"default":"tenant"} (both optional).
	EnvTenantMap = "STRIPE_TENANT_MAP"
	// EnvAccountTenantsPath is the SSM path of the stage's Connect account
	// → tenant map; EnvAccountTenantsVersion changes with it (set by the
	// CDK app, read by nobody: a new map replaces the instances).
	EnvAccountTenantsPath    = "STRIPE_ACCOUNT_TENANTS_PATH"
	EnvAccountTenantsVersion = "STRIPE_ACCOUNT_TENANTS_VERSION"
)

const (
	// FunctionTimeout covers the ingest call (at most MaxIngestTimeout),
	// the cold start's account map read and margin.
	FunctionTimeout = 30 * time.Second
	// MaxIngestTimeout is the largest accepted EnvIngestTimeout.
	MaxIngestTimeout = 20 * time.Second
)

// Config is stripe-eventbridge's configuration.
type Config struct {
	IngestFunction string
	IngestTimeout  time.Duration
	Tenants        webhook.TenantMap
	// AccountTenantsPath, when set, adds the accounts kept in SSM.
	AccountTenantsPath string
}

// Load reads the config from the environment and validates it.
func Load(r *envconf.Reader) (Config, error) {
	c := Config{
		IngestFunction: wire.Required(r, EnvIngestFunction, ""),
		IngestTimeout:  r.Duration(EnvIngestTimeout, lambdainvoke.DefaultTimeout),
	}
	r.JSON(EnvTenantMap, &c.Tenants)
	c.AccountTenantsPath = r.String(EnvAccountTenantsPath, "")
	if c.IngestTimeout < time.Second || c.IngestTimeout > MaxIngestTimeout {
		r.Fail(fmt.Errorf("%s must be 1s..%s (under the function's %s timeout)", EnvIngestTimeout, MaxIngestTimeout, FunctionTimeout))
	}
	if err := r.Err(); err != nil {
		return c, err
	}
	return c, wire.FromVars(c.Tenants.Validate(), EnvTenantMap)
}

// Clients are the AWS services the function calls.
type Clients struct {
	Lambda *lambda.Client
	// SSM reads the account map (nil when the stage keeps none there).
	SSM *ssm.Client
}

// NewClients builds them from one aws.Config.
func NewClients(cfg aws.Config) Clients {
	return Clients{Lambda: lambda.NewFromConfig(cfg), SSM: ssm.NewFromConfig(cfg)}
}

// New builds the handler: Stripe's provider (its Canonicalize and tenant
// rules; its Verify is never called) behind a relay to ingest.
func New(ctx context.Context, c Config, cl Clients, rt wire.Runtime) (*stripe.EventBridge, error) {
	rt = rt.WithDefaults()
	if cl.Lambda == nil {
		return nil, fmt.Errorf("%s: a Lambda client is required to invoke ingest", Name)
	}
	tenants, err := ssmparam.Tenants(ctx, cl.SSM, c.Tenants, c.AccountTenantsPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	relay, err := webhook.NewRelay(webhook.Deps{
		Provider: stripe.New(nil, tenants, rt.Log),
		Ingest:   &lambdainvoke.Ingest{Client: cl.Lambda, Function: c.IngestFunction, Timeout: c.IngestTimeout},
		Log:      rt.Log,
		Metrics:  rt.Metrics,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return stripe.NewEventBridge(relay, rt.Log)
}
