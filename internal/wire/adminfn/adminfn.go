// Package adminfn wires the admin-api function (API Gateway's /admin/*
// routes): environment → Config, DynamoDB, SQS, S3 and (deployed) Secrets
// Manager clients, the admin API over the replay engine and operator views
// replayfn builds.
package adminfn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/siteswarm/eventplatform/internal/admin"
	"github.com/siteswarm/eventplatform/internal/admin/console"
	"github.com/siteswarm/eventplatform/internal/aws/cwmetrics"
	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/lambdainvoke"
	"github.com/siteswarm/eventplatform/internal/aws/smsecret"
	"github.com/siteswarm/eventplatform/internal/aws/sqsqueue"
	"github.com/siteswarm/eventplatform/internal/cachepurge"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/subscriberhealth"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/replayfn"
)

// Name is the function's name.
const Name = "admin-api"

// Environment variables of admin-api (docs/local-development.md), besides
// everything replayfn reads (its replay route runs the same engine
// in-process) and TOPIC_DLQ_URLS (queue depths).
const (
	// EnvKeySecretARN is the Secrets Manager secret holding a JSON list of
	// the active bearer keys, e.g. ["k-new…", "k-old…"] (deployed).
	EnvKeySecretARN = "ADMIN_API_KEY_SECRET_ARN"
	// EnvKey holds comma-separated keys directly: local development only
	// (see wire.SecretSource).
	EnvKey = "ADMIN_API_KEY"
	// EnvKeyRefresh is how often the cached keys are re-read, e.g. "5m".
	EnvKeyRefresh = "ADMIN_API_KEY_REFRESH"
	// EnvHealthTimeout bounds GET /admin/health's probes, e.g. "5s".
	EnvHealthTimeout = "ADMIN_HEALTH_TIMEOUT"
	// EnvConsoleInsecureCookie ("true") drops Secure from the console's
	// session cookie: only for the local stack's plain HTTP.
	EnvConsoleInsecureCookie = "CONSOLE_INSECURE_COOKIE"
	// EnvAdminTable is the admin function's own table: console sessions
	// and failed sign-ins per address.
	EnvAdminTable = "ADMIN_TABLE"
	// EnvConsoleSessionTTL is a console session's absolute lifetime, e.g.
	// "8h" (5m..24h).
	EnvConsoleSessionTTL = "CONSOLE_SESSION_TTL"
	// EnvConsoleSessionIdle ends a console session unused this long, e.g.
	// "1h".
	EnvConsoleSessionIdle = "CONSOLE_SESSION_IDLE"
	// EnvConsoleSignInFree is how many sign-ins an address may fail before
	// it waits (default 5).
	EnvConsoleSignInFree = "CONSOLE_SIGNIN_FREE_ATTEMPTS"
	// EnvConsoleSignInMaxBackoff caps an address's wait after failed
	// sign-ins, e.g. "15m".
	EnvConsoleSignInMaxBackoff = "CONSOLE_SIGNIN_MAX_BACKOFF"
)

// FunctionTimeout is the admin-api's Lambda timeout, under API Gateway's
// 30 s integration limit.
const FunctionTimeout = 25 * time.Second

// Config is the admin-api function's configuration.
type Config struct {
	Admin      admin.Config
	Console    console.Config
	PurgeTable string
	AdminTable string
	Replay     replayfn.Config
	DLQURLs    map[string]string
	Keys       wire.SecretSource
	// HealthFunction applies a pause or resume at once ("": at the
	// subscriber-health function's next run).
	HealthFunction string
}

// Load reads the config from the environment and validates it. Errors name
// variables, never key values.
func Load(r *envconf.Reader, top topology.Topology) (Config, error) {
	rc, rerr := replayfn.Load(r, top)
	// One sign-in limit per source for the console's form and bearer keys
	// on /admin and /console alike.
	signIn := admin.SignInLimit{Free: r.Int(EnvConsoleSignInFree, 0), MaxBackoff: r.Duration(EnvConsoleSignInMaxBackoff, 0)}
	c := Config{
		Admin: admin.Config{HealthTimeout: r.Duration(EnvHealthTimeout, 0), SignIn: signIn}.WithDefaults(),
		Console: console.Config{
			InsecureCookie: r.Bool(EnvConsoleInsecureCookie, false),
			SessionTTL:     r.Duration(EnvConsoleSessionTTL, 0),
			SessionIdle:    r.Duration(EnvConsoleSessionIdle, 0),
			SignIn:         signIn,
		}.WithDefaults(),
		AdminTable:     wire.Required(r, EnvAdminTable, "console sessions and sign-in limits"),
		Replay:         rc,
		DLQURLs:        wire.TopicMap(r, wire.EnvDLQURLs, top, "DLQ URL"),
		PurgeTable:     wire.Required(r, wire.EnvPurgeTable, "the /admin/purge routes"),
		Keys:           wire.LoadSecretSource(r, EnvKeySecretARN, EnvKey, EnvKeyRefresh, admin.CheckKeys),
		HealthFunction: r.String(wire.EnvHealthFunction, ""),
	}
	if rerr != nil {
		return c, rerr
	}
	if err := r.Err(); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// Validate checks the config with the components' own checks.
func (c Config) Validate() error {
	return errors.Join(
		wire.FromVars(c.Admin.Validate(), EnvHealthTimeout, EnvConsoleSignInFree, EnvConsoleSignInMaxBackoff),
		wire.FromVars(c.Console.Validate(), EnvConsoleSessionTTL, EnvConsoleSessionIdle, EnvConsoleSignInFree, EnvConsoleSignInMaxBackoff),
		c.Replay.Validate(),
	)
}

// Clients are the AWS services admin-api calls; SecretsManager may be nil
// where keys come from the environment (the local stack).
type Clients struct {
	replayfn.Clients
	SecretsManager *secretsmanager.Client
	// Lambda notifies the subscriber-health function of a pause or resume
	// (nil: its schedule applies them).
	Lambda *lambda.Client
	// CloudWatch reads the consumers' delivery metrics for the console's
	// overview (nil: not shown).
	CloudWatch *cloudwatch.Client
}

// NewClients builds them from one aws.Config.
func NewClients(cfg aws.Config) Clients {
	return Clients{Clients: replayfn.NewClients(cfg), SecretsManager: secretsmanager.NewFromConfig(cfg), Lambda: lambda.NewFromConfig(cfg),
		CloudWatch: cloudwatch.NewFromConfig(cfg)}
}

// New builds the admin API. It reads the keys once (failing the cold start
// if they cannot be read) and caches them, refreshed every Keyring.Refresh.
func New(ctx context.Context, c Config, cl Clients, rt wire.Runtime) (*admin.API, error) {
	rt = rt.WithDefaults()
	keys, err := c.Keys.OpenKeyring(ctx, smsecret.FromARN(cl.SecretsManager), rt.Log)
	if err != nil {
		return nil, fmt.Errorf("%s: bearer keys: %w", Name, err)
	}
	svc, err := replayfn.NewServices(c.Replay, cl.Clients, rt)
	if err != nil {
		return nil, err
	}
	// Jobs are started, viewed, cancelled and restarted here (the replay
	// services' engine); their steps run in jobs-worker.
	var jobEngine admin.Jobs
	var policies admin.Retention
	if svc.Retention != nil {
		policies = svc.Retention
	}
	checks := []admin.Check{
		{Name: "eventsTable", Probe: func(ctx context.Context) error { return dynamo.TableActive(ctx, cl.DynamoDB, c.Replay.EventsTable) }},
		{Name: "incidentsTable", Probe: func(ctx context.Context) error { return dynamo.TableActive(ctx, cl.DynamoDB, c.Replay.IncidentsTable) }},
	}
	if svc.Jobs != nil {
		jobEngine = svc.Jobs
		jc := c.Replay.Jobs
		checks = append(checks, admin.Check{Name: "jobsTable", Probe: func(ctx context.Context) error { return dynamo.TableActive(ctx, cl.DynamoDB, jc.JobsTable) }})
		if jc.QueueURL != "" {
			checks = append(checks, admin.Check{Name: "jobsQueue", Probe: func(ctx context.Context) error {
				_, err := cl.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(jc.QueueURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages}})
				return err
			}})
		}
	}
	adminStore := &dynamo.Admin{Client: cl.DynamoDB, Table: c.AdminTable}
	checks = append(checks, admin.Check{Name: "adminTable", Probe: func(ctx context.Context) error { return dynamo.TableActive(ctx, cl.DynamoDB, c.AdminTable) }})
	purgeStore := &dynamo.Purge{Client: cl.DynamoDB, Table: c.PurgeTable, Now: rt.Now}
	stats := &sqsqueue.Stats{Client: cl.SQS, URLs: c.Replay.QueueURLs, DLQURLs: c.DLQURLs}
	purgeViews := &cachepurge.Views{Jobs: purgeStore, Reports: purgeStore, Now: rt.Now}
	breakers := &subscriberhealth.Operator{Store: &dynamo.Breakers{Client: cl.DynamoDB, Table: c.Replay.EventsTable}, Topology: c.Replay.Topology, Log: rt.Log, Now: rt.Now}
	if c.HealthFunction != "" && cl.Lambda != nil {
		breakers.Notifier = &lambdainvoke.Notifier{Client: cl.Lambda, Function: c.HealthFunction}
	}
	// The overview's delivery figures: the consumers' metrics as they emit
	// them (the namespace and the stage's dimension of this stage's
	// emitter, which every function shares).
	var deliveries admin.DeliveryStats
	if cl.CloudWatch != nil {
		deliveries = &cwmetrics.Stats{Client: cl.CloudWatch, Namespace: rt.Metrics.Namespace, Dimensions: rt.Metrics.Dimensions, Now: rt.Now}
	}
	var exports operator.Exports
	if svc.Exports != nil {
		exports = svc.Exports
	}
	// The console's pages ask the same ports as the JSON API.
	pages, err := console.New(c.Console, console.Deps{
		Keys: keys, Sessions: adminStore, SignIns: adminStore, Views: svc.Views, Replayer: svc.Replay, Incidents: operator.IncidentSearch{Views: svc.Views}, Queues: stats,
		Purge: purgeViews, Jobs: jobEngine, Exports: exports, Retention: policies, Breakers: breakers, Deliveries: deliveries,
		Topology: c.Replay.Topology, Log: rt.Log, Now: rt.Now,
	})
	if err != nil {
		return nil, err
	}
	return admin.New(c.Admin, admin.Deps{
		Keys:      keys,
		Views:     svc.Views,
		Replayer:  svc.Replay,
		Incidents: operator.IncidentSearch{Views: svc.Views},
		Queues:    stats,
		Checks:    append(checks, admin.Check{Name: "queues", Probe: func(ctx context.Context) error { _, err := stats.Depths(ctx); return err }}),
		Purge:     purgeViews,
		PurgeChecks: []admin.Check{
			{Name: "purgeTable", Probe: func(ctx context.Context) error { return dynamo.TableActive(ctx, cl.DynamoDB, c.PurgeTable) }},
			{Name: "purgeQueues", Probe: func(ctx context.Context) error { _, err := stats.Depths(ctx); return err }},
		},
		Jobs:      jobEngine,
		Exports:   exports,
		Retention: policies,
		Breakers:  breakers,
		Console:   pages,
		SignIns:   adminStore,
		Topology:  c.Replay.Topology,
		Log:       rt.Log,
		Now:       rt.Now,
	})
}
