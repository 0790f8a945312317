package wire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/siteswarm/eventplatform/internal/archive"
	"github.com/siteswarm/eventplatform/internal/blob"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/deliver"
	"github.com/siteswarm/eventplatform/internal/dynamo"
	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/metric"
	"github.com/siteswarm/eventplatform/internal/queue"
	"github.com/siteswarm/eventplatform/internal/secret"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/trace"
)

// Environment variables of every consumer function (one Lambda per topic;
// the CDK app sets them, docs/consumers.md documents them). EventsTable
// (EVENTS_TABLE) and IncidentsTable (INCIDENTS_TABLE) are shared names.
// Never rename one.
const (
	// EnvConsumerTopic is the topic this function consumes, e.g.
	// "billing.events". Its tuning (timeout, FIFO, …) comes from the
	// topology.
	EnvConsumerTopic = "CONSUMER_TOPIC"
	// EnvConsumerQueueURL is the topic queue's URL (retry delays are
	// visibility changes on it).
	EnvConsumerQueueURL = "CONSUMER_QUEUE_URL"
	// EnvConsumerDLQURL is the topic's dead-letter queue URL (poison
	// messages are sent there at once).
	EnvConsumerDLQURL = "CONSUMER_DLQ_URL"
	// EnvConsumerBackoffBase is the retry delay after the first failed
	// receive, doubled per receive, e.g. "5s".
	EnvConsumerBackoffBase = "CONSUMER_BACKOFF_BASE"
	// EnvConsumerBackoffCap bounds every retry delay (Retry-After
	// included), e.g. "15m".
	EnvConsumerBackoffCap = "CONSUMER_BACKOFF_CAP"
	// EnvConsumerConcurrency bounds the messages (FIFO: message groups)
	// one invocation works on at once.
	EnvConsumerConcurrency = "CONSUMER_CONCURRENCY"
)

// Environment variables of consumer-http.
const (
	// EnvSubscriberURL is where the topic's events are POSTed (https; http
	// only to a loopback host).
	EnvSubscriberURL = "SUBSCRIBER_URL"
	// EnvSubscriberSecretARN is the ARN of the Secrets Manager secret
	// holding a JSON list of the active signing secrets
	// (["whsec_new…","whsec_old…"]; deployed stages).
	EnvSubscriberSecretARN = "SUBSCRIBER_SECRET_ARN"
	// EnvSubscriberSecret holds comma-separated signing secrets directly:
	// local development only, where Secrets Manager is not emulated
	// (Lambda environment variables are readable by anyone who may read
	// the function's configuration).
	EnvSubscriberSecret = "SUBSCRIBER_SECRET"
	// EnvSubscriberSecretRefresh is how often the secrets are re-read,
	// e.g. "5m".
	EnvSubscriberSecretRefresh = "SUBSCRIBER_SECRET_REFRESH"
	// EnvSubscriberTimeout bounds one delivery request, e.g. "10s".
	EnvSubscriberTimeout = "SUBSCRIBER_TIMEOUT"
)

// Environment variables of consumer-archive (besides ARCHIVE_BUCKET, the
// shared bucket name).
const (
	// EnvArchivePrefix is the key prefix of archive objects (default
	// "archive").
	EnvArchivePrefix = "ARCHIVE_PREFIX"
)

// ConsumerFunctionName is the function name of a topic's consumer,
// "consumer-<kind>-<topic, dots as hyphens>" (e.g.
// "consumer-http-billing-events"): the function's name in the local stack.
func ConsumerFunctionName(tp topology.Topic) string {
	return fmt.Sprintf("consumer-%s-%s", tp.Consumer, strings.ReplaceAll(tp.Name, ".", "-"))
}

// ConsumerConfig is what every consumer function needs.
type ConsumerConfig struct {
	Topic          string
	QueueURL       string
	DLQURL         string
	EventsTable    string
	IncidentsTable string
	BackoffBase    time.Duration
	BackoffCap     time.Duration
	Concurrency    int
	// Retention is the TTL of outbox rows a consumer has to recreate.
	Retention time.Duration
	// Stage is the metric dimension of a deployed consumer.
	Stage string
}

// HTTPConsumerConfig configures consumer-http.
type HTTPConsumerConfig struct {
	ConsumerConfig
	SubscriberURL string
	// SecretARN (deployed) or Secrets (local): exactly one is set.
	SecretARN      string
	Secrets        []string
	SecretRefresh  time.Duration
	RequestTimeout time.Duration
}

// ArchiveConsumerConfig configures consumer-archive.
type ArchiveConsumerConfig struct {
	ConsumerConfig
	Bucket string
	Prefix string
}

func loadConsumerConfig(r *envconf.Reader) ConsumerConfig {
	return ConsumerConfig{
		Topic:          r.String(EnvConsumerTopic, ""),
		QueueURL:       r.String(EnvConsumerQueueURL, ""),
		DLQURL:         r.String(EnvConsumerDLQURL, ""),
		EventsTable:    r.String(EnvEventsTable, ""),
		IncidentsTable: r.String(EnvIncidentsTable, ""),
		BackoffBase:    r.Duration(EnvConsumerBackoffBase, consume.DefaultBackoffBase),
		BackoffCap:     r.Duration(EnvConsumerBackoffCap, consume.DefaultBackoffCap),
		Concurrency:    r.Int(EnvConsumerConcurrency, consume.DefaultConcurrency),
		Retention:      r.Duration(EnvRetention, ingest.DefaultRetention),
		Stage:          r.String(EnvStage, ""),
	}
}

// LoadHTTPConsumerConfig reads the consumer-http config from the
// environment, applies defaults and validates it against the topology.
func LoadHTTPConsumerConfig(r *envconf.Reader, top topology.Topology) (HTTPConsumerConfig, error) {
	c := HTTPConsumerConfig{
		ConsumerConfig: loadConsumerConfig(r),
		SubscriberURL:  r.String(EnvSubscriberURL, ""),
		SecretARN:      r.String(EnvSubscriberSecretARN, ""),
		Secrets:        r.List(EnvSubscriberSecret),
		SecretRefresh:  r.Duration(EnvSubscriberSecretRefresh, secret.DefaultRefresh),
		RequestTimeout: r.Duration(EnvSubscriberTimeout, deliver.DefaultTimeout),
	}
	if err := r.Err(); err != nil {
		return c, err
	}
	return c, c.Validate(top)
}

// LoadArchiveConsumerConfig reads the consumer-archive config from the
// environment, applies defaults and validates it against the topology.
func LoadArchiveConsumerConfig(r *envconf.Reader, top topology.Topology) (ArchiveConsumerConfig, error) {
	c := ArchiveConsumerConfig{
		ConsumerConfig: loadConsumerConfig(r),
		Bucket:         r.String(EnvBucket, ""),
		Prefix:         r.String(EnvArchivePrefix, archive.DefaultPrefix),
	}
	if err := r.Err(); err != nil {
		return c, err
	}
	return c, c.Validate(top)
}

// validate checks the shared part against the topic of the expected kind.
func (c ConsumerConfig) validate(top topology.Topology, kind topology.ConsumerKind) (topology.Topic, []error) {
	var errs []error
	tp, ok := top.Topic(c.Topic)
	switch {
	case c.Topic == "":
		errs = append(errs, fmt.Errorf("%s is required", EnvConsumerTopic))
	case !ok:
		errs = append(errs, fmt.Errorf("%s=%q is not a topic of the topology", EnvConsumerTopic, c.Topic))
	case tp.Consumer != kind:
		errs = append(errs, fmt.Errorf("%s=%q is consumed by the %q consumer, not %q", EnvConsumerTopic, c.Topic, tp.Consumer, kind))
	}
	for _, req := range []struct{ name, v string }{
		{EnvConsumerQueueURL, c.QueueURL}, {EnvConsumerDLQURL, c.DLQURL},
		{EnvEventsTable, c.EventsTable}, {EnvIncidentsTable, c.IncidentsTable},
	} {
		if req.v == "" {
			errs = append(errs, fmt.Errorf("%s is required", req.name))
		}
	}
	if c.BackoffBase < time.Second || c.BackoffBase > time.Hour {
		errs = append(errs, fmt.Errorf("%s must be 1s..1h (SQS visibility is counted in seconds)", EnvConsumerBackoffBase))
	}
	if c.BackoffCap < c.BackoffBase || c.BackoffCap > 12*time.Hour {
		errs = append(errs, fmt.Errorf("%s must be between %s and 12h (SQS's visibility limit)", EnvConsumerBackoffCap, EnvConsumerBackoffBase))
	}
	if c.Concurrency < 1 || c.Concurrency > 100 {
		errs = append(errs, fmt.Errorf("%s must be 1..100", EnvConsumerConcurrency))
	}
	if c.Retention < 7*24*time.Hour {
		errs = append(errs, fmt.Errorf("%s must be at least 7 days", EnvRetention))
	}
	return tp, errs
}

// Validate checks the config is complete and coherent. Errors name
// variables, never secret values.
func (c HTTPConsumerConfig) Validate(top topology.Topology) error {
	tp, errs := c.validate(top, topology.ConsumerHTTP)
	if c.SubscriberURL == "" {
		errs = append(errs, fmt.Errorf("%s is required", EnvSubscriberURL))
	} else if err := deliver.ValidateURL(c.SubscriberURL); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", EnvSubscriberURL, err))
	}
	switch {
	case c.SecretARN == "" && len(c.Secrets) == 0:
		errs = append(errs, fmt.Errorf("%s (or, locally, %s) is required", EnvSubscriberSecretARN, EnvSubscriberSecret))
	case c.SecretARN != "" && len(c.Secrets) > 0:
		errs = append(errs, fmt.Errorf("set %s or %s, not both", EnvSubscriberSecretARN, EnvSubscriberSecret))
	}
	for i, s := range c.Secrets {
		if _, err := deliver.Key(s); err != nil {
			errs = append(errs, fmt.Errorf("%s: secret #%d: %w", EnvSubscriberSecret, i+1, err))
		}
	}
	if c.SecretRefresh < time.Minute || c.SecretRefresh > time.Hour {
		errs = append(errs, fmt.Errorf("%s must be 1m..1h", EnvSubscriberSecretRefresh))
	}
	if c.RequestTimeout < time.Second {
		errs = append(errs, fmt.Errorf("%s must be at least 1s", EnvSubscriberTimeout))
	} else if tp.ConsumerTimeout > 0 && c.RequestTimeout > tp.ConsumerTimeout-2*time.Second {
		errs = append(errs, fmt.Errorf("%s (%s) must leave at least 2s of the topic's %s consumer timeout", EnvSubscriberTimeout, c.RequestTimeout, tp.ConsumerTimeout))
	}
	return errors.Join(errs...)
}

// Validate checks the config is complete and coherent.
func (c ArchiveConsumerConfig) Validate(top topology.Topology) error {
	_, errs := c.validate(top, topology.ConsumerArchive)
	if c.Bucket == "" {
		errs = append(errs, fmt.Errorf("%s is required", EnvBucket))
	}
	if c.Prefix == "" || strings.HasPrefix(c.Prefix, "/") || strings.HasSuffix(c.Prefix, "/") {
		errs = append(errs, fmt.Errorf("%s must be a key prefix without leading or trailing slash", EnvArchivePrefix))
	}
	return errors.Join(errs...)
}

var (
	_ consume.Rows         = (*dynamo.Events)(nil)
	_ consume.Queue        = (*queue.Source)(nil)
	_ consume.Incidents    = (*dynamo.Incidents)(nil)
	_ consume.Handler      = (*deliver.Deliverer)(nil)
	_ consume.BatchHandler = (*archive.Archiver)(nil)
	_ deliver.Secrets      = (*secret.Keyring)(nil)
)

// newConsumer builds the runtime around a topic's handler.
func newConsumer(c ConsumerConfig, top topology.Topology, cl Clients, log *slog.Logger) *consume.Consumer {
	tp, _ := top.Topic(c.Topic)
	return &consume.Consumer{
		Topic:       tp,
		Rows:        &dynamo.Events{Client: cl.DynamoDB, Table: c.EventsTable, Log: log},
		Queue:       &queue.Source{Client: cl.SQS, URL: c.QueueURL, DLQURL: c.DLQURL, FIFO: tp.FIFO},
		Payloads:    &blob.S3{Client: cl.S3},
		Incidents:   &dynamo.Incidents{Client: cl.DynamoDB, Table: c.IncidentsTable},
		Metrics:     metric.ForStage(c.Stage),
		Log:         log,
		Now:         time.Now,
		Backoff:     consume.Backoff{Base: c.BackoffBase, Cap: c.BackoffCap},
		Concurrency: c.Concurrency,
		Trace:       trace.Continue,
	}
}

// NewHTTPConsumer builds the consumer-http handler: the runtime around a
// Standard Webhooks deliverer for the topic's subscriber.
// The signing secrets are loaded at cold start (failing it when they cannot
// be read) and refreshed lazily, so a rotation needs no redeploy.
func NewHTTPConsumer(ctx context.Context, c HTTPConsumerConfig, top topology.Topology, cl Clients, log *slog.Logger) (*consume.Consumer, error) {
	var store secret.Store = secret.List(c.Secrets)
	if c.SecretARN != "" {
		if cl.SecretsManager == nil {
			return nil, errors.New("consumer-http: a Secrets Manager client is required for " + EnvSubscriberSecretARN)
		}
		store = &secret.Manager{Client: cl.SecretsManager, SecretID: c.SecretARN}
	}
	checked := secret.StoreFunc(func(ctx context.Context) ([]string, error) {
		s, err := store.Load(ctx)
		if err != nil {
			return nil, err
		}
		return s, deliver.CheckSecrets(s)
	})
	keys, err := secret.NewKeyring(ctx, checked, secret.KeyringOptions{Refresh: c.SecretRefresh, Log: log})
	if err != nil {
		return nil, fmt.Errorf("consumer-http: signing secrets: %w", err)
	}
	cons := newConsumer(c.ConsumerConfig, top, cl, log)
	cons.Handler = &deliver.Deliverer{
		URL:     c.SubscriberURL,
		Client:  deliver.NewClient(),
		Secrets: keys,
		Timeout: c.RequestTimeout,
		Log:     log,
	}
	return cons, cons.Validate()
}

// NewArchiveConsumer builds the consumer-archive handler: the runtime
// around the NDJSON archiver.
func NewArchiveConsumer(c ArchiveConsumerConfig, top topology.Topology, cl Clients, log *slog.Logger) (*consume.Consumer, error) {
	cons := newConsumer(c.ConsumerConfig, top, cl, log)
	cons.Batch = &archive.Archiver{Store: &blob.S3{Client: cl.S3}, Bucket: c.Bucket, Prefix: c.Prefix}
	return cons, cons.Validate()
}
