// Package jobsworkerfn wires the job engine's worker (jobs-worker, the jobs
// queue's consumer) with every shipped kind, each with its own deps, and
// the clients their steps need: DynamoDB, SQS, S3, Lambda (reconciliation publishes through ingest)
// and, on deployed stages, Secrets Manager (the Stripe API key). Tests and
// a queue-less setup use it to run steps in the sweep too.
package jobsworkerfn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/lambdainvoke"
	"github.com/siteswarm/eventplatform/internal/aws/s3blob"
	"github.com/siteswarm/eventplatform/internal/aws/smsecret"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/handlers/topicarchive"
	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/secret"
	"github.com/siteswarm/eventplatform/internal/thirdparty/stripeapi"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/jobsfn"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

// WorkerName is the worker function's name.
const WorkerName = "jobs-worker"

// Environment variables (besides jobsfn's, EVENTS_TABLE, ARCHIVE_BUCKET,
// INGEST_FUNCTION_ARN and STRIPE_TENANT_MAP, read as the webhook reads it).
const (
	// EnvStripeAPIKeySecretARN is the Secrets Manager secret holding a JSON
	// list of Stripe API keys (restricted key, events read; the first is
	// used). Unset: reconciliation fails with a clear error.
	EnvStripeAPIKeySecretARN = "STRIPE_API_KEY_SECRET_ARN"
	// EnvStripeAPIKey holds the key directly: local development only.
	EnvStripeAPIKey = "STRIPE_API_KEY"
	// EnvStripeAPIBaseURL points at Stripe's API (default) or a local
	// stand-in.
	EnvStripeAPIBaseURL = "STRIPE_API_BASE_URL"
	// EnvStripeTenantMap is the webhook's tenant map (see webhookfn), and
	// EnvStripeAccountTenantsPath where the stage keeps its Connect
	// accounts (SSM).
	EnvStripeTenantMap          = "STRIPE_TENANT_MAP"
	EnvStripeAccountTenantsPath = "STRIPE_ACCOUNT_TENANTS_PATH"
	// EnvImportConcurrency is how many ingest calls a file import makes
	// at once (default 16); EnvImportStepRecords how many records one of
	// its steps reads before it commits its checkpoint (default 20,000).
	EnvImportConcurrency = "IMPORT_CONCURRENCY"
	EnvImportStepRecords = "IMPORT_STEP_RECORDS"
	// EnvImportInvokeRecords is how many records one ingest call of a
	// file import carries (default 25, at most 100: ingest's batch).
	EnvImportInvokeRecords = "IMPORT_INVOKE_RECORDS"
)

// WorkerTimeout: a worker runs one step (at most a kind's StepTimeout plus
// the commit).
const WorkerTimeout = 3 * time.Minute

// WorkerMaxConcurrency caps the jobs queue's event source mapping
// (ScalingConfig.MaximumConcurrency, docs/scaling.md): a burst of wakes
// (the daily retention expiry's fan-out, a batch of erasures or imports)
// runs at most this many steps at once instead of taking the account's
// concurrency from the webhook and ingest. Five file-import steps make at
// most 5 × IMPORT_CONCURRENCY (16) = 80 ingest calls at once, about half of
// ingest's recommended reservation (150), leaving a Stripe burst its room.
// Wakes beyond it wait in the queue (Lambda does not receive them, so they
// do not count towards the DLQ's receive limit); every job's state is in
// its ledger, so waiting delays a job and loses nothing.
const WorkerMaxConcurrency = 5

// Config is the worker's and the sweep's configuration.
type Config struct {
	jobsfn.Config
	EventsTable    string
	IngestFunction string
	StripeBaseURL  string
	StripeKey      wire.SecretSource
	HasStripeKey   bool
	Tenants        webhook.TenantMap
	// AccountTenantsPath, when set, adds the accounts kept in SSM.
	AccountTenantsPath string
	// StripeTypes are the Stripe event types the topology routes.
	StripeTypes []string
	Import      jobkinds.ImportOptions
	// ArchivePrefixes are the audit archive's topic prefixes (the
	// retention expiry's).
	ArchivePrefixes []string
}

// Load reads the config from the environment and validates it.
func Load(r *envconf.Reader, top topology.Topology) (Config, error) {
	c := Config{
		StripeTypes:     jobkinds.RoutedTypes(top, stripe.Source),
		ArchivePrefixes: jobkinds.ArchivePrefixes(top, topicarchive.DefaultPrefix),
		Config:          jobsfn.Load(r),
		EventsTable:     wire.Required(r, wire.EnvEventsTable, ""),
		IngestFunction:  wire.Required(r, wire.EnvIngestFunction, "reconciliation publishes through ingest"),
		StripeBaseURL:   r.String(EnvStripeAPIBaseURL, stripeapi.DefaultBaseURL),
	}
	c.HasStripeKey = r.String(EnvStripeAPIKeySecretARN, "") != "" || r.String(EnvStripeAPIKey, "") != ""
	if c.HasStripeKey {
		c.StripeKey = wire.LoadSecretSource(r, EnvStripeAPIKeySecretARN, EnvStripeAPIKey, "STRIPE_API_KEY_REFRESH", nil)
	}
	r.JSON(EnvStripeTenantMap, &c.Tenants)
	c.AccountTenantsPath = r.String(EnvStripeAccountTenantsPath, "")
	c.Import.Concurrency = r.Int(EnvImportConcurrency, 0)
	c.Import.StepRecords = r.Int(EnvImportStepRecords, 0)
	c.Import.InvokeRecords = r.Int(EnvImportInvokeRecords, 0)
	if err := r.Err(); err != nil {
		return c, err
	}
	if err := c.Tenants.Validate(); err != nil {
		return c, fmt.Errorf("%s: %w", EnvStripeTenantMap, err)
	}
	if c.Import.Concurrency < 0 || c.Import.Concurrency > 128 {
		return c, fmt.Errorf("%s=%d: must be 1..128", EnvImportConcurrency, c.Import.Concurrency)
	}
	if c.Import.InvokeRecords < 0 || c.Import.InvokeRecords > envelope.MaxBatch {
		return c, fmt.Errorf("%s=%d: must be 1..%d", EnvImportInvokeRecords, c.Import.InvokeRecords, envelope.MaxBatch)
	}
	if c.Import.StepRecords < 0 || c.Import.StepRecords > 1_000_000 {
		return c, fmt.Errorf("%s=%d: must be 1..1000000", EnvImportStepRecords, c.Import.StepRecords)
	}
	return c, c.Config.Validate()
}

// Clients are the AWS services the worker and the sweep call.
type Clients struct {
	jobsfn.Clients
	Lambda         *lambda.Client
	SecretsManager *secretsmanager.Client
	// SSM reads the Connect account map (nil when the stage keeps none
	// there).
	SSM *ssm.Client
}

// NewClients builds them from one aws.Config.
func NewClients(cfg aws.Config) Clients {
	return Clients{Clients: jobsfn.NewClients(cfg), Lambda: lambda.NewFromConfig(cfg), SecretsManager: secretsmanager.NewFromConfig(cfg), SSM: ssm.NewFromConfig(cfg)}
}

// New builds the engine with every kind ready to run its steps.
func New(ctx context.Context, c Config, cl Clients, rt wire.Runtime) (*jobs.Engine, error) {
	rt = rt.WithDefaults()
	// Stripe's tenant map, resolved as the webhook resolves it: the
	// reconciliation and the imports attribute Stripe events alike.
	tenants, err := webhookfn.ResolveTenants(ctx, c.Tenants, cl.SSM, c.AccountTenantsPath)
	if err != nil {
		return nil, fmt.Errorf("jobs-worker: %w", err)
	}
	events := &dynamo.Events{Client: cl.DynamoDB, Table: c.EventsTable, Log: rt.Log}
	incidents := &dynamo.Incidents{Client: cl.DynamoDB, Table: c.IncidentsTable}
	blobs := &s3blob.S3{Client: cl.S3}
	objects := purgeObjects{blobs}
	fence := dynamo.Fence{JobsTable: c.JobsTable}
	ingest := &lambdainvoke.Ingest{Client: cl.Lambda, Function: c.IngestFunction}
	store := c.Store(cl.Clients)
	policies, err := c.Retention(cl.Clients, nil, rt)
	if err != nil {
		return nil, err
	}
	var stripeEvents jobkinds.StripeEvents
	if c.HasStripeKey {
		// Read on the first reconciliation step, not at cold start: most
		// steps (exports, erasures) never need it.
		keys := &lazyKeys{log: rt.Log, open: func(ctx context.Context) (stripeapi.Keys, error) {
			k, err := c.StripeKey.OpenKeyring(ctx, smsecret.FromARN(cl.SecretsManager), rt.Log)
			if err != nil {
				return nil, err // not a typed nil in the interface
			}
			return k, nil
		}}
		stripeEvents = stripeEventsAPI{stripeapi.NewClient(c.StripeBaseURL, keys, nil)}
	}
	// Each kind with its own deps: what its steps call and nothing else.
	kinds := []jobs.Kind{
		jobkinds.Export(jobkinds.ExportDeps{Source: exportSource{events, incidents}, Payloads: blobs, Objects: objects, Bucket: c.Engine.Bucket, Policies: policies}),
		jobkinds.Erasure(jobkinds.ErasureDeps{Store: &dynamo.Erasure{Events: events, Incidents: incidents, Fence: fence}, Objects: objects,
			Bucket: c.Engine.Bucket, Now: rt.Now, Rewrites: objects, ArchivePrefixes: c.ArchivePrefixes, Jobs: store}),
		jobkinds.Reconcile(jobkinds.ReconcileDeps{Events: stripeEvents, Canon: stripe.New(secret.List{}, tenants, rt.Log), Ingest: ingest, Types: c.StripeTypes}),
		jobkinds.FileImport(jobkinds.FileImportDeps{Objects: importObjects{blobs}, Ingest: ingest, Bucket: c.Engine.Bucket, Options: c.Import,
			StripeFor: func(tenant string) jobkinds.Canonicalizer {
				// As the webhook attributes (account map, then metadata),
				// with the import's tenant as the default: an event naming
				// no tenant is the file's tenant's, one naming another is
				// refused.
				m := tenants
				m.Default = tenant
				return stripe.New(secret.List{}, m, rt.Log)
			}}),
		jobkinds.Retention(jobkinds.RetentionDeps{Policies: policies, Store: &dynamo.RetentionExpiry{Events: events, Incidents: incidents, Fence: fence},
			Objects: objects, Jobs: store, Bucket: c.Engine.Bucket, ArchivePrefixes: c.ArchivePrefixes, JobsPrefix: jobs.ObjectPrefix, Now: rt.Now}),
	}
	if err := runsEveryKind(kinds); err != nil {
		return nil, err
	}
	return jobsfn.New(c.Config, cl.Clients, rt, kinds)
}

// runsEveryKind refuses a worker that does not run every registered kind
// (jobkinds.Kinds) with its handler: a kind added there and not here would
// have its jobs started and never run.
func runsEveryKind(kinds []jobs.Kind) error {
	run := map[string]bool{}
	for _, k := range kinds {
		if k.Handler == nil {
			return fmt.Errorf("jobs-worker: kind %s has no handler", k.Name)
		}
		run[k.Name] = true
	}
	var missing []string
	for _, k := range jobkinds.Kinds() {
		if !run[k.Name] {
			missing = append(missing, k.Name)
		}
	}
	if len(missing) > 0 || len(run) != len(jobkinds.Kinds()) {
		return fmt.Errorf("jobs-worker: it runs %d kinds, jobkinds.Kinds registers %d (not run: %v)", len(run), len(jobkinds.Kinds()), missing)
	}
	return nil
}

// importObjects adapts the S3 adapter to the file import's port.
type importObjects struct{ *s3blob.S3 }

var _ jobkinds.ImportBlobs = importObjects{}

// purgeObjects adapts the S3 adapter to the retention expiry's port.
type purgeObjects struct{ *s3blob.S3 }

var (
	_ jobkinds.PurgeObjects   = purgeObjects{}
	_ jobkinds.ErasureObjects = purgeObjects{}
	_ jobkinds.Rewrites       = purgeObjects{}
)

func (o purgeObjects) EraseUnder(ctx context.Context, bucket, prefix string, limit int) ([]jobkinds.ObjectVersion, bool, error) {
	vs, more, err := o.S3.EraseUnder(ctx, bucket, prefix, limit)
	out := make([]jobkinds.ObjectVersion, len(vs))
	for i, v := range vs {
		out[i] = jobkinds.ObjectVersion(v)
	}
	return out, more, err
}

func (o purgeObjects) PutVersion(ctx context.Context, bucket, key string, body []byte, metadata map[string]string, ifMatch string) (string, error) {
	id, err := o.S3.PutVersion(ctx, bucket, key, body, metadata, ifMatch)
	if errors.Is(err, s3blob.ErrChanged) {
		err = fmt.Errorf("%w: %w", jobkinds.ErrObjectChanged, err)
	}
	return id, err
}

func (o purgeObjects) ListVersions(ctx context.Context, bucket, prefix string) ([]jobkinds.StoredVersion, error) {
	vs, err := o.S3.ListVersions(ctx, bucket, prefix)
	out := make([]jobkinds.StoredVersion, len(vs))
	for i, v := range vs {
		out[i] = jobkinds.StoredVersion(v)
	}
	return out, err
}

func (o importObjects) Stat(ctx context.Context, bucket, key, versionID string) (jobkinds.ObjectInfo, error) {
	info, err := o.S3.Stat(ctx, bucket, key, versionID)
	if errors.Is(err, s3blob.ErrNotFound) {
		err = fmt.Errorf("%w: %w", jobkinds.ErrNoSuchObject, err)
	}
	return jobkinds.ObjectInfo(info), err
}

func (o importObjects) ReadRange(ctx context.Context, p jobkinds.RangeParams) (io.ReadCloser, error) {
	body, err := o.S3.ReadRange(ctx, s3blob.RangeParams(p))
	if errors.Is(err, s3blob.ErrChanged) || errors.Is(err, s3blob.ErrNotFound) {
		err = fmt.Errorf("%w: %w", jobkinds.ErrObjectChanged, err)
	}
	return body, err
}

// exportSource joins the events and incidents readers.
type exportSource struct {
	*dynamo.Events
	*dynamo.Incidents
}

// stripeEventsAPI adapts the Stripe client to the reconcile kind's port.
type stripeEventsAPI struct{ c *stripeapi.Client }

func (s stripeEventsAPI) ListEvents(ctx context.Context, p jobkinds.StripeListParams) ([]json.RawMessage, bool, error) {
	page, err := s.c.ListEvents(ctx, stripeapi.ListParams{CreatedFrom: p.CreatedFrom, StartingAfter: p.StartingAfter, Limit: p.Limit, Type: p.Type, Types: p.Types})
	return page.Events, page.HasMore, err
}

// lazyKeys opens the Stripe key's keyring on first use; a failed open is
// tried again on the next use (the step retries, as on any Stripe error).
type lazyKeys struct {
	open func(ctx context.Context) (stripeapi.Keys, error)
	log  *slog.Logger

	mu   sync.Mutex
	keys stripeapi.Keys
}

func (l *lazyKeys) Active(ctx context.Context) []string {
	l.mu.Lock()
	if l.keys == nil {
		k, err := l.open(ctx)
		if err != nil {
			l.log.WarnContext(ctx, "jobs: the Stripe API key cannot be read", "error", err)
		}
		l.keys = k
	}
	keys := l.keys
	l.mu.Unlock()
	if keys == nil {
		return nil // "no API key": a transient step error
	}
	return keys.Active(ctx)
}
