// Package purgeconsumerfn wires consumer-purge: the consume runtime around
// the purge consumer (internal/cachepurge), calling the CDN's purge API
// (internal/thirdparty/cfpurge) with a token from Secrets Manager (deployed) or the
// environment (local).
package purgeconsumerfn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/smsecret"
	"github.com/siteswarm/eventplatform/internal/aws/ssmparam"
	"github.com/siteswarm/eventplatform/internal/cachepurge"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/thirdparty/cfpurge"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/consumerfn"
)

// Name is the function's role name.
const Name = "consumer-purge"

// Environment variables of consumer-purge (besides consumerfn's and
// PURGE_TABLE).
const (
	// EnvZones maps tenants to Cloudflare zone ids:
	// {"zones":{"acme":"023e…"},"default":"…"} (default optional).
	EnvZones = "PURGE_ZONES"
	// EnvZonesPath is the SSM path under which the deployed stage keeps
	// its tenant → zone map (ssmparam), merged into the zones at cold
	// start; EnvZonesVersion changes with it so a deploy replaces the
	// function's instances.
	EnvZonesPath    = "PURGE_ZONES_PATH"
	EnvZonesVersion = "PURGE_ZONES_VERSION"
	// EnvAPIBaseURL is the purge API root (default Cloudflare's).
	EnvAPIBaseURL = "CLOUDFLARE_API_BASE_URL"
	// EnvTokenSecretARN is the Secrets Manager secret holding a JSON list
	// of API tokens (the first is used; deployed stages).
	EnvTokenSecretARN = "CLOUDFLARE_API_TOKEN_SECRET_ARN"
	// EnvToken holds the token directly: local development only.
	EnvToken = "CLOUDFLARE_API_TOKEN"
	// EnvTokenRefresh is how often the token is re-read, e.g. "5m".
	EnvTokenRefresh = "CLOUDFLARE_API_TOKEN_REFRESH"
	// EnvRate is the pace of purge API calls per second per function
	// instance (the account's limit divided by the consumer's maximum
	// concurrency), e.g. "4".
	EnvRate = "PURGE_RATE"
	// EnvAPITimeout bounds one API call, e.g. "10s".
	EnvAPITimeout = "PURGE_API_TIMEOUT"
	// EnvConcurrency bounds tenant groups purged at once per batch.
	EnvConcurrency = "PURGE_CONCURRENCY"
)

// DefaultRate paces each instance at 4 calls a second.
const DefaultRate = 4

// Config is consumer-purge's configuration.
type Config struct {
	consumerfn.Config
	Purge      cachepurge.ConsumerConfig
	PurgeTable string
	BaseURL    string
	Token      wire.SecretSource
	Rate       float64
	APITimeout time.Duration
	// ZonesPath, when set, adds the zones kept in SSM.
	ZonesPath string
}

// Load reads the config from the environment and validates it. Errors never
// quote a token.
func Load(r *envconf.Reader, top topology.Topology) (Config, error) { return load(r, top, false) }

// LoadLocal is Load for local mode (the local stack without a token):
// purges are recorded by a local API instead of sent, so no token is read.
func LoadLocal(r *envconf.Reader, top topology.Topology) (Config, error) { return load(r, top, true) }

// HasToken reports whether the environment names a token (local mode is
// the absence of one).
func HasToken(r *envconf.Reader) bool {
	return r.String(EnvTokenSecretARN, "") != "" || r.String(EnvToken, "") != ""
}

func load(r *envconf.Reader, top topology.Topology, local bool) (Config, error) {
	c := Config{
		Config:     consumerfn.Load(r, top, topology.ConsumerPurge),
		PurgeTable: wire.Required(r, wire.EnvPurgeTable, ""),
		BaseURL:    r.String(EnvAPIBaseURL, cfpurge.DefaultBaseURL),
		Rate:       float64(r.Int(EnvRate, DefaultRate)),
		APITimeout: r.Duration(EnvAPITimeout, cfpurge.DefaultTimeout),
	}
	if !local {
		c.Token = wire.LoadSecretSource(r, EnvTokenSecretARN, EnvToken, EnvTokenRefresh, nil)
	}
	r.JSON(EnvZones, &c.Purge.Zones)
	c.ZonesPath = r.String(EnvZonesPath, "")
	c.Purge.Concurrency = r.Int(EnvConcurrency, 0)
	c.Purge = c.Purge.WithDefaults()
	if err := cfpurge.ValidateBaseURL(c.BaseURL); err != nil {
		r.Fail(fmt.Errorf("%s: %w", EnvAPIBaseURL, err))
	}
	if c.Rate < 1 || c.Rate > 100 {
		r.Fail(fmt.Errorf("%s must be 1..100 calls a second", EnvRate))
	}
	if tp := c.Consume.Topic; c.APITimeout < time.Second || (tp.ConsumerTimeout > 0 && c.APITimeout > tp.ConsumerTimeout/2) {
		r.Fail(fmt.Errorf("%s must be 1s..half the topic's %s consumer timeout", EnvAPITimeout, tp.ConsumerTimeout))
	}
	if tp := c.Consume.Topic; tp.MaxReceiveCount > 0 && tp.MaxReceiveCount < c.Purge.MaxAttempts {
		r.Fail(fmt.Errorf("topic %s redrives after %d receives, before the purge consumer's %d attempts", tp.Name, tp.MaxReceiveCount, c.Purge.MaxAttempts))
	}
	if err := r.Err(); err != nil {
		return c, err
	}
	return c, errors.Join(
		wire.FromVars(c.Consume.Validate(), consumerfn.EnvBackoffBase, consumerfn.EnvBackoffCap, consumerfn.EnvConcurrency),
		wire.FromVars(c.Purge.Validate(), EnvZones, EnvConcurrency),
	)
}

// Clients are the AWS services consumer-purge calls; SecretsManager may be
// nil where the token comes from the environment (the local stack).
type Clients struct {
	consumerfn.Clients
	SecretsManager *secretsmanager.Client
	// SSM reads the zone map (nil when the stage keeps none there).
	SSM *ssm.Client
}

// NewClients builds them from one aws.Config.
func NewClients(cfg aws.Config) Clients {
	return Clients{Clients: consumerfn.NewClients(cfg), SecretsManager: secretsmanager.NewFromConfig(cfg), SSM: ssm.NewFromConfig(cfg)}
}

// New builds the consumer-purge handler. The token is read at cold start
// (failing it when it cannot be) and refreshed lazily.
func New(ctx context.Context, c Config, cl Clients, rt wire.Runtime) (*consume.Consumer, error) {
	c, err := ResolveZones(ctx, c, cl.SSM)
	if err != nil {
		return nil, err
	}
	tokens, err := c.Token.OpenKeyring(ctx, smsecret.FromARN(cl.SecretsManager), rt.Log)
	if err != nil {
		return nil, fmt.Errorf("%s: API token: %w", Name, err)
	}
	return NewWithAPI(c, cl, rt, &cfpurge.Client{BaseURL: c.BaseURL, Tokens: tokens, HTTP: cfpurge.NewHTTPClient(), Timeout: c.APITimeout})
}

// ResolveZones merges the zones kept under ZonesPath (SSM) into the
// config's and validates them as the environment's are (one call at cold
// start; none without a path).
func ResolveZones(ctx context.Context, c Config, client *ssm.Client) (Config, error) {
	zones, err := ssmparam.Extend(ctx, client, c.Purge.Zones.ByTenant, c.ZonesPath)
	if err != nil {
		return c, fmt.Errorf("%s: zones: %w", Name, err)
	}
	c.Purge.Zones.ByTenant = zones
	if err := c.Purge.Validate(); err != nil {
		return c, fmt.Errorf("%s: %s: %w", Name, c.ZonesPath, err)
	}
	return c, nil
}

// NewWithAPI builds the handler around a given purge API (local mode's
// recorder).
func NewWithAPI(c Config, cl Clients, rt wire.Runtime, api cachepurge.API) (*consume.Consumer, error) {
	rt = rt.WithDefaults()
	store := &dynamo.Purge{Client: cl.DynamoDB, Table: c.PurgeTable, Now: rt.Now}
	h, err := cachepurge.NewConsumer(c.Purge, cachepurge.ConsumerDeps{
		Jobs:      store,
		Telemetry: store,
		API:       api,
		Pacer:     cachepurge.NewPacer(c.Rate, time.Now), // pacing is wall-clock time, whatever the test clock
		Metrics:   rt.Metrics,
		Now:       rt.Now,
		Log:       rt.Log,
	})
	if err != nil {
		return nil, err
	}
	return consumerfn.New(c.Config, cl.Clients, rt, nil, h)
}

// Kind is consumer-purge as the CDK app, the local stack and the link test
// see it (consumerfn.Kind). Its table, API token and zones are the cache
// purge service's, shared with purge-api: the CDK app deploys them in
// infra/cdk/platform/cachepurge.go and the local stack runs the consumer in
// fn_cachepurge.go (local purge API, zones in the local SSM).
var Kind = consumerfn.Kind{
	Kind:     topology.ConsumerPurge,
	Role:     Name,
	Services: []string{"secretsmanager", "ssm"},
	Batch:    true,
	Load:     func(r *envconf.Reader, top topology.Topology) error { _, err := Load(r, top); return err },
}
