// Package jobsfn is what every function using the durable job engine
// shares (jobs-worker, jobs-sweep, admin-api, replay): the jobs table and
// queue settings, the engine's config, and the engine over the given kinds.
package jobsfn

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/s3blob"
	"github.com/siteswarm/eventplatform/internal/aws/sqsqueue"
	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/retention"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/dataclients"
)

// Environment variables of the job engine's functions (besides
// INCIDENTS_TABLE and ARCHIVE_BUCKET).
const (
	// EnvJobsQueueURL is the jobs queue; unset, jobs run by the sweep
	// alone.
	EnvJobsQueueURL = "JOBS_QUEUE_URL"
	// EnvRetention keeps finished jobs, e.g. "720h".
	EnvRetention = "JOBS_RETENTION"
	// EnvBackoffBase is the first retry delay of a failed step (doubling
	// per attempt; default 10s). Tests and load runs shorten it.
	EnvBackoffBase = "JOBS_BACKOFF_BASE"
)

// Config is the engine's part of a function's configuration.
type Config struct {
	Engine         jobs.Config
	JobsTable      string
	QueueURL       string
	IncidentsTable string
	// LedgerRetention is the events' TTL (LEDGER_RETENTION): the platform
	// default, and the longest a tenant's retention policy may keep them.
	LedgerRetention time.Duration
}

// Load reads it (callers check r.Err and Validate).
func Load(r *envconf.Reader) Config {
	c := Config{
		JobsTable:      wire.Required(r, wire.EnvJobsTable, ""),
		QueueURL:       r.String(EnvJobsQueueURL, ""),
		IncidentsTable: wire.Required(r, wire.EnvIncidentsTable, "failed jobs open incidents"),
	}
	c.Engine.Retention = r.Duration(EnvRetention, 0)
	c.LedgerRetention = r.Duration(wire.EnvRetention, ledger.DefaultRetention)
	c.Engine.BackoffBase = r.Duration(EnvBackoffBase, 0)
	c.Engine.Bucket = wire.Required(r, wire.EnvBucket, "large checkpoints and job output")
	c.Engine = c.Engine.WithDefaults()
	return c
}

// Validate checks the engine config.
func (c Config) Validate() error {
	return errors.Join(wire.FromVars(c.Engine.Validate(), EnvRetention, EnvBackoffBase),
		wire.FromVars(c.retentionConfig().WithDefaults().Validate(), wire.EnvRetention))
}

func (c Config) retentionConfig() retention.Config {
	return retention.Config{MaxEventDays: int(c.LedgerRetention / retention.Day)}
}

// Policies is the retention policy store (in the jobs table).
func (c Config) Policies(cl Clients) *dynamo.Retention {
	return &dynamo.Retention{Client: cl.DynamoDB, Table: c.JobsTable}
}

// Retention is the policy service; starter (the engine, or nil) starts the
// purge a shortened policy needs.
func (c Config) Retention(cl Clients, starter retention.Starter, rt wire.Runtime) (*retention.Service, error) {
	return retention.New(c.retentionConfig(), retention.Deps{Store: c.Policies(cl), Jobs: starter, Now: rt.WithDefaults().Now})
}

// PolicyTenants lists the tenants with a retention policy (the daily
// purge's).
func (c Config) PolicyTenants(cl Clients) func(ctx context.Context) ([]string, error) {
	store := c.Policies(cl)
	return func(ctx context.Context) ([]string, error) { return retention.AllTenants(ctx, store) }
}

// Clients are the AWS services the engine itself calls: the data path's bundle.
type Clients = dataclients.Clients

// NewClients builds them from one aws.Config.
func NewClients(cfg aws.Config) Clients { return dataclients.New(cfg) }

// SweepName is the sweep function's name; SweepTimeout bounds a run
// (it wakes every due job within it).
const (
	SweepName    = "jobs-sweep"
	SweepTimeout = 5 * time.Minute
)

// LoadSweep reads the sweep's config: it only wakes jobs (jobs-worker runs
// their steps), so it needs the queue.
func LoadSweep(r *envconf.Reader) (Config, error) {
	c := Load(r)
	if c.QueueURL == "" {
		r.Fail(errors.New(EnvJobsQueueURL + ": required: the sweep wakes jobs through the jobs queue"))
	}
	if err := r.Err(); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// NewSweep builds the sweep's engine: the kinds' descriptions (their steps
// run in jobs-worker), and for the daily retention expiry the tenants with
// a policy, each of whom gets one (its descriptor's schedule).
func NewSweep(c Config, cl Clients, rt wire.Runtime) (*jobs.Engine, error) {
	kinds := jobkinds.Kinds()
	for i, k := range kinds {
		if k.Name == jobkinds.KindRetention {
			kinds[i].DailyTenants = c.PolicyTenants(cl)
		}
	}
	return New(c, cl, rt, kinds)
}

// Store is the jobs table adapter.
func (c Config) Store(cl Clients) *dynamo.Jobs {
	return &dynamo.Jobs{Client: cl.DynamoDB, Table: c.JobsTable}
}

// New builds the engine over kinds.
func New(c Config, cl Clients, rt wire.Runtime, kinds []jobs.Kind) (*jobs.Engine, error) {
	rt = rt.WithDefaults()
	var waker jobs.Waker
	if c.QueueURL != "" {
		waker = &sqsqueue.Waker{Client: cl.SQS, URL: c.QueueURL}
	}
	return jobs.New(c.Engine, jobs.Deps{
		Store:     c.Store(cl),
		Waker:     waker,
		Blobs:     &s3blob.S3{Client: cl.S3},
		Incidents: &dynamo.Incidents{Client: cl.DynamoDB, Table: c.IncidentsTable},
		Kinds:     kinds,
		Metrics:   rt.Metrics,
		Log:       rt.Log,
		Now:       rt.Now,
	})
}
