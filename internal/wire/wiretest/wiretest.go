// Package wiretest builds the platform's functions on a test's emulator
// environment the way the Lambdas build themselves: from the environment
// the CDK app sets (resource names from the test's own tables, queues and
// bucket, plus the test's settings), through each function's Load and New.
// Tests get the deployed graph without writing the environment out again.
package wiretest

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"testing"
	"time"

	"github.com/siteswarm/eventplatform/internal/admin"
	"github.com/siteswarm/eventplatform/internal/cachepurge"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/dlqarchiver"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/outboxsweep"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/adminfn"
	"github.com/siteswarm/eventplatform/internal/wire/consumerfn"
	"github.com/siteswarm/eventplatform/internal/wire/consumerkinds"
	"github.com/siteswarm/eventplatform/internal/wire/dlqarchiverfn"
	"github.com/siteswarm/eventplatform/internal/wire/ingestfn"
	"github.com/siteswarm/eventplatform/internal/wire/jobsfn"
	"github.com/siteswarm/eventplatform/internal/wire/jobsworkerfn"
	"github.com/siteswarm/eventplatform/internal/wire/purgeapifn"
	"github.com/siteswarm/eventplatform/internal/wire/purgeconsumerfn"
	"github.com/siteswarm/eventplatform/internal/wire/replayfn"
	"github.com/siteswarm/eventplatform/internal/wire/sweeperfn"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

// Opts are a function's settings beyond the env's resources and its
// runtime: metrics and logs to capture, a clock. Zero values discard
// metrics and logs and use the wall clock.
type Opts struct {
	// Settings are environment variables, over the resource names.
	Settings map[string]string
	Metrics  *metric.Emitter
	Now      func() time.Time
	// Log receives the function's log lines (nil: discarded).
	Log *slog.Logger
}

// Environment is the environment a deployed function of env's stage reads:
// tables, bucket, topic queue URLs, DLQ URLs and ARNs and the stage name,
// with settings over them.
func Environment(env *awslocaltest.Env, settings map[string]string) map[string]string {
	dlqURLs, dlqARNs := map[string]string{}, map[string]string{}
	for name, q := range env.Resources.Queues {
		dlqURLs[name], dlqARNs[name] = q.DLQURL, q.DLQARN
	}
	m := map[string]string{
		wire.EnvEventsTable:    env.Resources.EventsTable,
		wire.EnvIncidentsTable: env.Resources.IncidentsTable,
		wire.EnvPurgeTable:     env.Resources.PurgeTable,
		wire.EnvBucket:         env.Resources.Bucket,
		wire.EnvQueueURLs:      jsonOf(env.Resources.QueueURLs()),
		wire.EnvDLQURLs:        jsonOf(dlqURLs),
		wire.EnvDLQARNs:        jsonOf(dlqARNs),
		wire.EnvStage:          env.Prefix,
		wire.EnvJobsTable:      env.Resources.JobsTable,
		jobsfn.EnvJobsQueueURL: env.Resources.JobsQueue.URL,
		adminfn.EnvAdminTable:  env.Resources.AdminTable,
	}
	maps.Copy(m, settings)
	return m
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func (o Opts) reader(env *awslocaltest.Env) *envconf.Reader {
	return envconf.FromMap(Environment(env, o.Settings))
}

func (o Opts) runtime() wire.Runtime {
	m := o.Metrics
	if m == nil {
		m = metric.Discard()
	}
	return wire.Runtime{Log: o.Log, Metrics: m, Now: o.Now}
}

// check fails the test on err.
func check(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("wiretest: %v", err)
	}
}

// IngestConfig loads the ingest config.
func IngestConfig(tb testing.TB, env *awslocaltest.Env, o Opts) ingestfn.Config {
	tb.Helper()
	v, err := ingestfn.Load(o.reader(env), env.Topology)
	check(tb, err)
	return v
}

// Ingest builds the ingestion service.
func Ingest(tb testing.TB, env *awslocaltest.Env, o Opts) *ingest.Service {
	tb.Helper()
	cl := env.Data()
	v, err := ingestfn.New(IngestConfig(tb, env, o), cl, o.runtime())
	check(tb, err)
	return v
}

// StripeWebhook builds the webhook-stripe handler; it invokes ingest with
// env's Lambda client (see awslocaltest.Env.ServeFunctions).
func StripeWebhook(tb testing.TB, env *awslocaltest.Env, o Opts) *webhook.Handler {
	tb.Helper()
	return Webhook(tb, env, stripe.Declaration, o)
}

// Webhook builds a provider's webhook function's handler (webhookfn.For)
// from its variables in o's settings; it invokes ingest with env's Lambda
// client.
func Webhook(tb testing.TB, env *awslocaltest.Env, d webhook.Declaration, o Opts) *webhook.Handler {
	tb.Helper()
	cfg, err := webhookfn.LoadProvider(d, o.reader(env))
	check(tb, err)
	v, err := webhookfn.New(context.Background(), cfg, webhookfn.Clients{Lambda: env.Lambda}, o.runtime())
	check(tb, err)
	return v
}

// Consumer builds a topic's consumer as its kind's local wiring does
// (consumerfn.Kind.Local): any registered kind that has one.
func Consumer(tb testing.TB, env *awslocaltest.Env, topic string, o Opts) *consume.Consumer {
	tb.Helper()
	tp, _ := env.Topology.Topic(topic)
	k, ok := consumerkinds.Of(tp.Consumer)
	if !ok || k.Local == nil {
		tb.Fatalf("wiretest: topic %q: kind %q has no local wiring", topic, tp.Consumer)
	}
	v, err := k.Local(context.Background(), envconf.FromMap(consumerEnv(env, topic, o.Settings)), env.Topology, consumerClients(env), o.runtime())
	check(tb, err)
	return v
}

// HTTPConsumer builds a topic's consumer-http handler.
func HTTPConsumer(tb testing.TB, env *awslocaltest.Env, topic string, o Opts) *consume.Consumer {
	tb.Helper()
	return Consumer(tb, env, topic, o)
}

// ArchiveConsumer builds a topic's consumer-archive handler.
func ArchiveConsumer(tb testing.TB, env *awslocaltest.Env, topic string, o Opts) *consume.Consumer {
	tb.Helper()
	return Consumer(tb, env, topic, o)
}

// consumerClients are a consumer's clients on env: the data path's, and
// env's Lambda client (nil until env serves functions) for breaker notices.
func consumerClients(env *awslocaltest.Env) consumerfn.Clients {
	return consumerfn.Clients{Clients: env.Data(), Lambda: env.Lambda}
}

func consumerEnv(env *awslocaltest.Env, topic string, settings map[string]string) map[string]string {
	q := env.Queue(topic)
	m := Environment(env, map[string]string{
		consumerfn.EnvTopic: topic, consumerfn.EnvQueueURL: q.URL, consumerfn.EnvDLQURL: q.DLQURL,
	})
	maps.Copy(m, settings)
	return m
}

// Sweeper builds the sweeper.
func Sweeper(tb testing.TB, env *awslocaltest.Env, o Opts) *outboxsweep.Sweeper {
	tb.Helper()
	cfg, err := sweeperfn.Load(o.reader(env), env.Topology)
	check(tb, err)
	v, err := sweeperfn.New(cfg, env.Data(), o.runtime())
	check(tb, err)
	return v
}

// Archiver builds the DLQ archiver (alerts to ALERT_TOPIC_ARN when the
// settings name one, log lines otherwise).
func Archiver(tb testing.TB, env *awslocaltest.Env, o Opts) *dlqarchiver.Archiver {
	tb.Helper()
	cfg, err := dlqarchiverfn.Load(o.reader(env), env.Topology)
	check(tb, err)
	v, err := dlqarchiverfn.New(cfg, dlqarchiverfn.Clients{DynamoDB: env.DynamoDB, S3: env.S3, SNS: env.SNS}, o.runtime())
	check(tb, err)
	return v
}

// ReplayConfig loads the replay function's config.
func ReplayConfig(tb testing.TB, env *awslocaltest.Env, o Opts) replayfn.Config {
	tb.Helper()
	v, err := replayfn.Load(o.reader(env), env.Topology)
	check(tb, err)
	return v
}

// Replay builds the replay engine and operator views.
func Replay(tb testing.TB, env *awslocaltest.Env, o Opts) replayfn.Services {
	tb.Helper()
	v, err := replayfn.NewServices(ReplayConfig(tb, env, o), env.Data(), o.runtime())
	check(tb, err)
	return v
}

// ReplayFunction builds the replay function's handler.
func ReplayFunction(tb testing.TB, env *awslocaltest.Env, o Opts) *operator.Function {
	tb.Helper()
	v, err := replayfn.New(ReplayConfig(tb, env, o), env.Data(), o.runtime())
	check(tb, err)
	return v
}

// Admin builds the admin API with the given bearer key.
func Admin(tb testing.TB, env *awslocaltest.Env, key string, o Opts) *admin.API {
	tb.Helper()
	s := maps.Clone(o.Settings)
	if s == nil {
		s = map[string]string{}
	}
	s[adminfn.EnvKey] = key
	o.Settings = s
	cfg, err := adminfn.Load(o.reader(env), env.Topology)
	check(tb, err)
	v, err := adminfn.New(context.Background(), cfg, adminfn.Clients{Clients: env.Data(), Lambda: env.Lambda}, o.runtime())
	check(tb, err)
	return v
}

// PurgeAPI builds the purge-api function; it publishes through ingest with
// env's Lambda client (see awslocaltest.Env.ServeFunctions).
func PurgeAPI(tb testing.TB, env *awslocaltest.Env, o Opts) *cachepurge.Function {
	tb.Helper()
	cfg, err := purgeapifn.Load(o.reader(env))
	check(tb, err)
	v, err := purgeapifn.New(cfg, purgeapifn.Clients{DynamoDB: env.DynamoDB, Lambda: env.Lambda}, o.runtime())
	check(tb, err)
	return v
}

// PurgeConsumer builds a purge topic's consumer-purge handler; the
// settings name the purge API (CLOUDFLARE_API_BASE_URL, the token, zones).
func PurgeConsumer(tb testing.TB, env *awslocaltest.Env, topic string, o Opts) *consume.Consumer {
	tb.Helper()
	cfg, err := purgeconsumerfn.Load(envconf.FromMap(consumerEnv(env, topic, o.Settings)), env.Topology)
	check(tb, err)
	v, err := purgeconsumerfn.New(context.Background(), cfg, purgeconsumerfn.Clients{Clients: consumerClients(env)}, o.runtime())
	check(tb, err)
	return v
}

// Jobs builds the job engine as jobs-worker and jobs-sweep do, with every
// shipped kind; reconciliation publishes through ingest with env's Lambda
// client (see awslocaltest.Env.ServeFunctions) and reads Stripe where the
// settings say (STRIPE_API_BASE_URL, STRIPE_API_KEY). INGEST_FUNCTION_ARN
// defaults to "ingest".
func Jobs(tb testing.TB, env *awslocaltest.Env, o Opts) *jobs.Engine {
	tb.Helper()
	s := map[string]string{wire.EnvIngestFunction: ingestfn.Name}
	maps.Copy(s, o.Settings)
	o.Settings = s
	cfg, err := jobsworkerfn.Load(o.reader(env), env.Topology)
	check(tb, err)
	cl := jobsworkerfn.Clients{Clients: env.Data(), Lambda: env.Lambda}
	v, err := jobsworkerfn.New(context.Background(), cfg, cl, o.runtime())
	check(tb, err)
	return v
}
