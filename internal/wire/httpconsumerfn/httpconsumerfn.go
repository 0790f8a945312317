// Package httpconsumerfn wires consumer-http: the consume runtime around a
// Standard Webhooks deliverer for the topic's subscriber, with signing
// secrets from Secrets Manager (deployed) or the environment (local).
package httpconsumerfn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/siteswarm/eventplatform/internal/aws/smsecret"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/handlers/deliver"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/consumerfn"
)

// Name is the function's role name (each topic's function is named by
// consumerfn.FunctionName).
const Name = "consumer-http"

// Environment variables of consumer-http (besides consumerfn's).
const (
	// EnvSubscriberURL is where the topic's events are POSTed (https; http
	// only to a loopback host).
	EnvSubscriberURL = "SUBSCRIBER_URL"
	// EnvSecretARN is the Secrets Manager secret holding a JSON list of the
	// active signing secrets (["whsec_new…","whsec_old…"]; deployed).
	EnvSecretARN = "SUBSCRIBER_SECRET_ARN"
	// EnvSecret holds comma-separated signing secrets directly: local
	// development only (see wire.SecretSource).
	EnvSecret = "SUBSCRIBER_SECRET"
	// EnvSecretRefresh is how often the secrets are re-read, e.g. "5m".
	EnvSecretRefresh = "SUBSCRIBER_SECRET_REFRESH"
	// EnvTimeout bounds one delivery request, e.g. "10s".
	EnvTimeout = "SUBSCRIBER_TIMEOUT"
)

// Config is consumer-http's configuration.
type Config struct {
	consumerfn.Config
	SubscriberURL  string
	Secrets        wire.SecretSource
	RequestTimeout time.Duration
}

// Load reads the config from the environment and validates it. Errors name
// variables, never secret values.
func Load(r *envconf.Reader, top topology.Topology) (Config, error) {
	c := Config{
		Config:         consumerfn.Load(r, top, topology.ConsumerHTTP),
		SubscriberURL:  wire.Required(r, EnvSubscriberURL, ""),
		Secrets:        wire.LoadSecretSource(r, EnvSecretARN, EnvSecret, EnvSecretRefresh, deliver.CheckSecrets),
		RequestTimeout: r.Duration(EnvTimeout, deliver.DefaultTimeout),
	}
	if c.SubscriberURL != "" {
		if err := deliver.ValidateURL(c.SubscriberURL); err != nil {
			r.Fail(fmt.Errorf("%s: %w", EnvSubscriberURL, err))
		}
	}
	if tp := c.Consume.Topic; c.RequestTimeout < time.Second {
		r.Fail(fmt.Errorf("%s must be at least 1s", EnvTimeout))
	} else if tp.ConsumerTimeout > 0 && c.RequestTimeout > tp.ConsumerTimeout-2*time.Second {
		r.Fail(fmt.Errorf("%s (%s) must leave at least 2s of the topic's %s consumer timeout", EnvTimeout, c.RequestTimeout, tp.ConsumerTimeout))
	}
	if err := r.Err(); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// Validate checks the config with the components' own checks.
func (c Config) Validate() error {
	return errors.Join(
		wire.FromVars(c.Consume.Validate(), consumerfn.EnvBackoffBase, consumerfn.EnvBackoffCap, consumerfn.EnvConcurrency),
	)
}

// Clients are the AWS services consumer-http calls; SecretsManager may be
// nil where secrets come from the environment (the local stack).
type Clients struct {
	consumerfn.Clients
	SecretsManager *secretsmanager.Client
}

// NewClients builds them from one aws.Config.
func NewClients(cfg aws.Config) Clients {
	return Clients{Clients: consumerfn.NewClients(cfg), SecretsManager: secretsmanager.NewFromConfig(cfg)}
}

// New builds the consumer-http handler. The signing secrets are loaded at
// cold start (failing it when they cannot be read) and refreshed lazily, so
// a rotation needs no redeploy.
func New(ctx context.Context, c Config, cl Clients, rt wire.Runtime) (*consume.Consumer, error) {
	rt = rt.WithDefaults()
	keys, err := c.Secrets.OpenKeyring(ctx, smsecret.FromARN(cl.SecretsManager), rt.Log)
	if err != nil {
		return nil, fmt.Errorf("consumer-http: signing secrets: %w", err)
	}
	return consumerfn.New(c.Config, cl.Clients, rt, &deliver.Deliverer{
		URL:     c.SubscriberURL,
		Client:  deliver.NewClient(),
		Secrets: keys,
		Timeout: c.RequestTimeout,
		Log:     rt.Log.With("topic", c.Consume.Topic.Name),
	}, nil)
}

// Kind is consumer-http as the CDK app, the local stack and the link test
// see it (consumerfn.Kind): a subscriber URL and a signing-secret list per
// topic, read from Secrets Manager.
var Kind = consumerfn.Kind{
	Kind:       topology.ConsumerHTTP,
	Role:       Name,
	Services:   []string{"secretsmanager"},
	Subscriber: EnvSubscriberURL,
	Secret: &consumerfn.Secret{
		ID:         "SubscriberSecret",
		EnvARN:     EnvSecretARN,
		Env:        EnvSecret,
		LocalValue: LocalSecret,
		Description: func(topic string) string {
			return "Standard Webhooks signing secrets of the " + topic + ` subscriber, a JSON list: ["whsec_<base64>"]. ` +
				"Set it after the first deploy and share it with the subscriber; list two during a rotation."
		},
		WhyNoRotation: "A signing secret shared with an external subscriber: rotating it needs the subscriber to accept the new one, so operators roll it with an overlap window (docs/deploy.md#rotation); the consumer re-reads the list every few minutes.",
	},
	Load: func(r *envconf.Reader, top topology.Topology) error { _, err := Load(r, top); return err },
	Local: func(ctx context.Context, r *envconf.Reader, top topology.Topology, cl consumerfn.Clients, rt wire.Runtime) (*consume.Consumer, error) {
		cfg, err := Load(r, top)
		if err != nil {
			return nil, err
		}
		return New(ctx, cfg, Clients{Clients: cl}, rt)
	},
}

// LocalSecret signs local deliveries unless SUBSCRIBER_SECRET says
// otherwise: base64 of "evp-local-dev-subscriber-signing-key", a
// clearly-local value that can never be mistaken for a real secret.
const LocalSecret = "whsec_ZXZwLWxvY2FsLWRldi1zdWJzY3JpYmVyLXNpZ25pbmcta2V5"
