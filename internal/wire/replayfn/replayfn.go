// Package replayfn wires the replay function (the Step Functions replay
// state machine's steps and the operator views the CLI calls): environment
// → Config, DynamoDB, SQS and S3 clients, the replay engine
// (internal/replay) and the views (internal/operator) behind the
// function's typed actions.
package replayfn

import (
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/s3blob"
	"github.com/siteswarm/eventplatform/internal/aws/sqsqueue"
	"github.com/siteswarm/eventplatform/internal/claimcheck"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/observe/trace"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/replay"
	"github.com/siteswarm/eventplatform/internal/retention"
	"github.com/siteswarm/eventplatform/internal/subscriberhealth"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/dataclients"
	"github.com/siteswarm/eventplatform/internal/wire/jobsfn"
)

// Name is the function's name (the CLI invokes it).
const Name = "replay"

// Environment variables of the replay function, besides EVENTS_TABLE,
// INCIDENTS_TABLE, ARCHIVE_BUCKET, TOPIC_QUEUE_URLS, CLAIM_CHECK_BYTES and
// LEDGER_RETENTION.
const (
	// EnvConcurrency bounds incidents the all-in-one replay action
	// replays in parallel.
	EnvConcurrency = "REPLAY_CONCURRENCY"
	// EnvStuckAfter is when the views show a retrying incident as stuck
	// (the sweeper reopens it then), e.g. "15m".
	EnvStuckAfter = "REPLAY_STUCK_AFTER"
)

// FunctionTimeout covers an all-in-one replay of replay.MaxLimit
// incidents; the state machine's replay-one calls take a fraction.
const FunctionTimeout = 5 * time.Minute

// Config is the replay function's configuration.
type Config struct {
	Replay          replay.Config
	Views           operator.Config
	Topology        topology.Topology
	EventsTable     string
	IncidentsTable  string
	Bucket          string
	QueueURLs       map[string]string
	ClaimCheckBytes int
	// Jobs, when JOBS_TABLE is set, lets replaying a failed job's incident
	// restart the job, and serves the jobs.* actions (`evp jobs`).
	Jobs *jobsfn.Config
}

// Load reads the config from the environment and validates it.
func Load(r *envconf.Reader, top topology.Topology) (Config, error) {
	c := Config{
		Topology:        top,
		EventsTable:     wire.Required(r, wire.EnvEventsTable, ""),
		IncidentsTable:  wire.Required(r, wire.EnvIncidentsTable, ""),
		Bucket:          wire.Required(r, wire.EnvBucket, "incident bodies and claim-checked payloads"),
		QueueURLs:       wire.TopicMap(r, wire.EnvQueueURLs, top, "queue URL"),
		ClaimCheckBytes: r.Int(wire.EnvClaimCheckBytes, claimcheck.DefaultThreshold),
		Replay: replay.Config{
			Retention:   r.Duration(wire.EnvRetention, 0),
			Concurrency: r.Int(EnvConcurrency, 0),
		}.WithDefaults(),
		Views: operator.Config{StuckAfter: r.Duration(EnvStuckAfter, 0)}.WithDefaults(),
	}
	if r.String(wire.EnvJobsTable, "") != "" {
		jc := jobsfn.Load(r)
		c.Jobs = &jc
	}
	if err := r.Err(); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// Validate checks the config with the components' own checks.
func (c Config) Validate() error {
	var jobsErr error
	if c.Jobs != nil {
		jobsErr = c.Jobs.Validate()
	}
	return errors.Join(
		jobsErr,
		wire.FromVars(c.Replay.Validate(), wire.EnvRetention, EnvConcurrency),
		wire.FromVars(c.Views.Validate(), EnvStuckAfter),
		wire.FromVars(claimcheck.CheckThreshold(c.ClaimCheckBytes), wire.EnvClaimCheckBytes),
	)
}

// Clients are the AWS services the replay function calls: the data path's bundle.
type Clients = dataclients.Clients

// NewClients builds them from one aws.Config.
func NewClients(cfg aws.Config) Clients { return dataclients.New(cfg) }

// Services are the replay engine and the operator views over the same
// tables (the admin API serves them too).
type Services struct {
	Replay    *replay.Service
	Views     *operator.Views
	Incidents *dynamo.Incidents
	// Jobs is the job engine (nil without JOBS_TABLE).
	Jobs *jobs.Engine
	// Retention reads and sets tenants' retention policies (nil without
	// JOBS_TABLE: they live in the jobs table); a shortened policy starts
	// its purge through Jobs.
	Retention *retention.Service
	// Exports signs finished exports' download URLs (nil without
	// JOBS_TABLE).
	Exports *jobkinds.ExportDownloads
}

// NewServices builds the replay engine and the views.
func NewServices(c Config, cl Clients, rt wire.Runtime) (Services, error) {
	rt = rt.WithDefaults()
	blobs := &s3blob.S3{Client: cl.S3}
	incidents := &dynamo.Incidents{Client: cl.DynamoDB, Table: c.IncidentsTable}
	events := &dynamo.Events{Client: cl.DynamoDB, Table: c.EventsTable, Log: rt.Log}
	bodies := &incident.Bodies{Store: blobs, Bucket: c.Bucket}
	var restarter replay.JobRestarter
	var engine *jobs.Engine
	var policies *retention.Service
	if c.Jobs != nil {
		// The kinds' descriptions validate starts; their steps run in
		// jobs-worker.
		e, err := jobsfn.New(*c.Jobs, cl, rt, jobkinds.Kinds())
		if err != nil {
			return Services{}, err
		}
		restarter, engine = e, e
		if policies, err = c.Jobs.Retention(cl, e, rt); err != nil {
			return Services{}, err
		}
	}
	r, err := replay.New(c.Replay, replay.Deps{
		Jobs:       restarter,
		Incidents:  incidents,
		Events:     events,
		Restorer:   &dynamo.Recovery{Events: events, Incidents: incidents},
		Bodies:     bodies,
		ClaimCheck: claimcheck.Checker{Store: blobs, Bucket: c.Bucket, Threshold: c.ClaimCheckBytes},
		Sender:     &sqsqueue.Sender{Client: cl.SQS, URLs: c.QueueURLs, FIFO: c.Topology.FIFOTopics()},
		Topology:   c.Topology,
		Log:        rt.Log,
		Now:        rt.Now,
		// A replay's trace continues into the consumer (AWSTraceHeader).
		TraceHeader: trace.Header,
	})
	if err != nil {
		return Services{}, err
	}
	v, err := operator.New(c.Views, operator.Deps{Incidents: incidents, Events: events, Bodies: bodies, Payloads: blobs,
		Topics: c.Topology.TopicNames(), Now: rt.Now})
	if err != nil {
		return Services{}, err
	}
	s := Services{Replay: r, Views: v, Incidents: incidents, Jobs: engine, Retention: policies}
	if engine != nil {
		s.Exports = &jobkinds.ExportDownloads{Jobs: engine, Store: blobs, Bucket: c.Bucket, Now: rt.Now}
	}
	return s, nil
}

// New builds the replay function's handler.
func New(c Config, cl Clients, rt wire.Runtime) (*operator.Function, error) {
	s, err := NewServices(c, cl, rt)
	if err != nil {
		return nil, err
	}
	var j operator.Jobs
	if s.Jobs != nil {
		j = s.Jobs
	}
	// The topics' health for `evp topics`: a pause or resume takes effect
	// when the subscriber-health function next runs (evp notifies it at
	// once; see cmd/evp topics).
	rt = rt.WithDefaults()
	topics := &subscriberhealth.Operator{Store: &dynamo.Breakers{Client: cl.DynamoDB, Table: c.EventsTable}, Topology: c.Topology, Log: rt.Log, Now: rt.Now}
	f := operator.NewFunction(s.Replay, s.Views, j).WithTopics(topics)
	if s.Retention != nil {
		f.WithRetention(s.Retention)
	}
	if s.Exports != nil {
		f.WithExports(s.Exports)
	}
	return f, nil
}
