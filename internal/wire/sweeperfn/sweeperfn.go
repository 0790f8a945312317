// Package sweeperfn wires the sweeper function (run by an EventBridge
// schedule): environment → Config, DynamoDB, SQS and S3 clients, the outbox
// sweeper (internal/outboxsweep).
package sweeperfn

import (
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/s3blob"
	"github.com/siteswarm/eventplatform/internal/aws/sqsqueue"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/observe/trace"
	"github.com/siteswarm/eventplatform/internal/outboxsweep"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/dataclients"
)

// Name is the function's name.
const Name = "sweeper"

// The sweeper's own environment variables (docs/operations.md), besides
// EVENTS_TABLE, INCIDENTS_TABLE, ARCHIVE_BUCKET, TOPIC_QUEUE_URLS and
// INCIDENT_INLINE_BYTES.
const (
	EnvLease = "SWEEP_LEASE"
	// EnvBackoffBase is the wait after a row's first failed resend.
	EnvBackoffBase = "SWEEP_BACKOFF_BASE"
	EnvPageSize    = "SWEEP_PAGE_SIZE"
	EnvBatchSize   = "SWEEP_BATCH_SIZE"
	EnvConcurrency = "SWEEP_CONCURRENCY"
	// EnvMargin is kept free before the Lambda deadline, e.g. "10s".
	EnvMargin = "SWEEP_MARGIN"
	// EnvSettleAfter is how long after its consumer lease a processing row
	// whose outcome was lost is settled, e.g. "45m".
	EnvSettleAfter = "SWEEP_SETTLE_AFTER"
	// EnvStuckAfter is how long a replay may stay retrying before the
	// sweeper reopens it, e.g. "15m".
	EnvStuckAfter = "REPLAY_STUCK_AFTER"
)

// FunctionTimeout leaves the 2-minute schedule room to drain a large
// backlog; overlapping runs are safe.
const FunctionTimeout = 5 * time.Minute

// Config is the sweeper function's configuration.
type Config struct {
	Sweep          outboxsweep.Config
	Topology       topology.Topology
	EventsTable    string
	IncidentsTable string
	Bucket         string
	QueueURLs      map[string]string
	InlineBytes    int
}

// Load reads the config from the environment and validates it.
func Load(r *envconf.Reader, top topology.Topology) (Config, error) {
	c := Config{
		Topology:       top,
		EventsTable:    wire.Required(r, wire.EnvEventsTable, ""),
		IncidentsTable: wire.Required(r, wire.EnvIncidentsTable, ""),
		Bucket:         wire.Required(r, wire.EnvBucket, "incident bodies over the inline limit"),
		QueueURLs:      wire.TopicMap(r, wire.EnvQueueURLs, top, "queue URL"),
		InlineBytes:    r.Int(wire.EnvIncidentInlineBytes, incident.DefaultInlineBytes),
		Sweep: outboxsweep.Config{
			Lease:       r.Duration(EnvLease, 0),
			BackoffBase: r.Duration(EnvBackoffBase, 0),
			PageSize:    r.Int(EnvPageSize, 0),
			BatchSize:   r.Int(EnvBatchSize, 0),
			Concurrency: r.Int(EnvConcurrency, 0),
			Margin:      r.Duration(EnvMargin, 0),
			SettleAfter: r.Duration(EnvSettleAfter, 0),
			StuckAfter:  r.Duration(EnvStuckAfter, 0),
		}.WithDefaults(),
	}
	if err := r.Err(); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// Validate checks the config with the components' own checks.
func (c Config) Validate() error {
	return errors.Join(
		wire.FromVars(c.Sweep.Validate(), EnvLease, EnvPageSize, EnvBatchSize, EnvConcurrency, EnvMargin, EnvSettleAfter, EnvStuckAfter, EnvBackoffBase),
		wire.FromVars(incident.CheckInlineBytes(c.InlineBytes), wire.EnvIncidentInlineBytes),
	)
}

// Clients are the AWS services the sweeper calls: the data path's bundle.
type Clients = dataclients.Clients

// NewClients builds them from one aws.Config.
func NewClients(cfg aws.Config) Clients { return dataclients.New(cfg) }

// New builds the sweeper.
func New(c Config, cl Clients, rt wire.Runtime) (*outboxsweep.Sweeper, error) {
	rt = rt.WithDefaults()
	events := &dynamo.Events{Client: cl.DynamoDB, Table: c.EventsTable, Log: rt.Log}
	incidents := &dynamo.Incidents{Client: cl.DynamoDB, Table: c.IncidentsTable}
	return outboxsweep.New(c.Sweep, outboxsweep.Deps{
		Rows:        events,
		Abandoner:   &dynamo.Recovery{Events: events, Incidents: incidents},
		Incidents:   incidents,
		Sender:      &sqsqueue.Sender{Client: cl.SQS, URLs: c.QueueURLs, FIFO: c.Topology.FIFOTopics()},
		Bodies:      &incident.Bodies{Store: &s3blob.S3{Client: cl.S3}, Bucket: c.Bucket, Threshold: c.InlineBytes},
		Metrics:     rt.Metrics,
		Log:         rt.Log,
		Now:         rt.Now,
		TraceHeader: trace.Header,
	})
}
