package wire

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/siteswarm/eventplatform/internal/alert"
	"github.com/siteswarm/eventplatform/internal/archiver"
	"github.com/siteswarm/eventplatform/internal/blob"
	"github.com/siteswarm/eventplatform/internal/claimcheck"
	"github.com/siteswarm/eventplatform/internal/dynamo"
	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/metric"
	"github.com/siteswarm/eventplatform/internal/queue"
	"github.com/siteswarm/eventplatform/internal/replay"
	"github.com/siteswarm/eventplatform/internal/sweep"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/trace"
)

// Environment variables of the recovery functions (sweeper, dlq-archiver,
// replay); docs/operations.md documents them. Never rename one. They also
// read EnvEventsTable, EnvIncidentsTable, EnvBucket and (sweeper, replay)
// EnvQueueURLs.
const (
	// EnvAlertTopicARN is the SNS alert topic; unset, alerts are log lines.
	EnvAlertTopicARN = "ALERT_TOPIC_ARN"
	// EnvDLQARNs is a JSON object: topic name → DLQ ARN (the archiver maps
	// a dead letter without a topic attribute to its topic by source queue).
	EnvDLQARNs = "TOPIC_DLQ_ARNS"
	// EnvStage names the stage in alert subjects (e.g. "evp-prod").
	EnvStage = "STAGE_NAME"
	// EnvIncidentInlineBytes is the largest incident body kept inline
	// (default 64 KiB; larger ones go to the archive bucket).
	EnvIncidentInlineBytes = "INCIDENT_INLINE_BYTES"

	// Sweeper tunables.
	EnvSweepLease       = "SWEEP_LEASE"
	EnvSweepPageSize    = "SWEEP_PAGE_SIZE"
	EnvSweepBatchSize   = "SWEEP_BATCH_SIZE"
	EnvSweepConcurrency = "SWEEP_CONCURRENCY"
	// EnvSweepMargin is kept free before the Lambda deadline, e.g. "10s".
	EnvSweepMargin = "SWEEP_MARGIN"

	// EnvReplayConcurrency bounds incidents the all-in-one replay action
	// replays in parallel.
	EnvReplayConcurrency = "REPLAY_CONCURRENCY"
)

// Recommended Lambda timeouts (the CDK app sets them).
const (
	// SweeperFunctionTimeout leaves the 2-minute schedule room to drain a
	// large backlog; overlapping runs are safe.
	SweeperFunctionTimeout = 5 * time.Minute
	// ArchiverFunctionTimeout covers a batch of ten with S3 copies; the
	// DLQs' visibility timeout must be at least this.
	ArchiverFunctionTimeout = 60 * time.Second
	// ReplayFunctionTimeout covers an all-in-one replay of MaxLimit
	// incidents; the state machine's replay-one calls take a fraction.
	ReplayFunctionTimeout = 5 * time.Minute
)

// SweeperConfig configures the sweeper function.
type SweeperConfig struct {
	EventsTable    string
	IncidentsTable string
	Bucket         string
	QueueURLs      map[string]string
	InlineBytes    int
	Lease          time.Duration
	PageSize       int
	BatchSize      int
	Concurrency    int
	Margin         time.Duration
	// Stage is the metric dimension of the deployed sweeper.
	Stage string
}

// LoadSweeperConfig reads and validates the sweeper config.
func LoadSweeperConfig(r *envconf.Reader, top topology.Topology) (SweeperConfig, error) {
	c := SweeperConfig{
		EventsTable:    r.String(EnvEventsTable, ""),
		IncidentsTable: r.String(EnvIncidentsTable, ""),
		Bucket:         r.String(EnvBucket, ""),
		InlineBytes:    r.Int(EnvIncidentInlineBytes, incident.DefaultInlineBytes),
		Lease:          r.Duration(EnvSweepLease, sweep.DefaultLease),
		PageSize:       r.Int(EnvSweepPageSize, sweep.DefaultPageSize),
		BatchSize:      r.Int(EnvSweepBatchSize, sweep.DefaultBatchSize),
		Concurrency:    r.Int(EnvSweepConcurrency, sweep.DefaultConcurrency),
		Margin:         r.Duration(EnvSweepMargin, sweep.DefaultMargin),
		Stage:          r.String(EnvStage, ""),
	}
	r.JSON(EnvQueueURLs, &c.QueueURLs)
	if err := r.Err(); err != nil {
		return c, err
	}
	return c, c.Validate(top)
}

// Validate checks the sweeper config.
func (c SweeperConfig) Validate(top topology.Topology) error {
	errs := recoveryTables(c.EventsTable, c.IncidentsTable, c.Bucket)
	errs = append(errs, queueURLs(c.QueueURLs, top)...)
	errs = append(errs, inline(c.InlineBytes)...)
	if c.Lease < 5*time.Second {
		errs = append(errs, fmt.Errorf("%s must be at least 5s (it must outlast a batch's sends)", EnvSweepLease))
	}
	if c.PageSize < 1 || c.PageSize > 1000 {
		errs = append(errs, fmt.Errorf("%s must be 1..1000", EnvSweepPageSize))
	}
	if c.BatchSize < 1 || c.BatchSize > 100 {
		errs = append(errs, fmt.Errorf("%s must be 1..100 (one BatchGetItem)", EnvSweepBatchSize))
	}
	if c.Concurrency < 1 || c.Concurrency > 100 {
		errs = append(errs, fmt.Errorf("%s must be 1..100", EnvSweepConcurrency))
	}
	if c.Margin < time.Second {
		errs = append(errs, fmt.Errorf("%s must be at least 1s", EnvSweepMargin))
	}
	return errors.Join(errs...)
}

// NewSweeper builds the sweeper.
func NewSweeper(c SweeperConfig, top topology.Topology, cl Clients, log *slog.Logger, metrics *metric.Emitter) *sweep.Sweeper {
	events := &dynamo.Events{Client: cl.DynamoDB, Table: c.EventsTable, Log: log}
	incidents := &dynamo.Incidents{Client: cl.DynamoDB, Table: c.IncidentsTable}
	blobs := &blob.S3{Client: cl.S3}
	return &sweep.Sweeper{
		Rows:        events,
		Abandoner:   &dynamo.Recovery{Events: events, Incidents: incidents},
		Incidents:   incidents,
		Sender:      topicSender(cl, c.QueueURLs, top),
		Bodies:      &incident.Bodies{Store: blobs, Bucket: c.Bucket, Threshold: c.InlineBytes},
		Metrics:     metrics,
		Log:         log,
		Now:         time.Now,
		Lease:       c.Lease,
		PageSize:    c.PageSize,
		BatchSize:   c.BatchSize,
		Concurrency: c.Concurrency,
		Margin:      c.Margin,
		TraceHeader: trace.Header,
	}
}

// ArchiverConfig configures the dlq-archiver function.
type ArchiverConfig struct {
	EventsTable    string
	IncidentsTable string
	Bucket         string
	// DLQARNs maps topic → DLQ ARN.
	DLQARNs       map[string]string
	AlertTopicARN string
	Stage         string
	InlineBytes   int
}

// LoadArchiverConfig reads and validates the archiver config.
func LoadArchiverConfig(r *envconf.Reader, top topology.Topology) (ArchiverConfig, error) {
	c := ArchiverConfig{
		EventsTable:    r.String(EnvEventsTable, ""),
		IncidentsTable: r.String(EnvIncidentsTable, ""),
		Bucket:         r.String(EnvBucket, ""),
		AlertTopicARN:  r.String(EnvAlertTopicARN, ""),
		Stage:          r.String(EnvStage, ""),
		InlineBytes:    r.Int(EnvIncidentInlineBytes, incident.DefaultInlineBytes),
	}
	r.JSON(EnvDLQARNs, &c.DLQARNs)
	if err := r.Err(); err != nil {
		return c, err
	}
	return c, c.Validate(top)
}

// Validate checks the archiver config.
func (c ArchiverConfig) Validate(top topology.Topology) error {
	errs := recoveryTables(c.EventsTable, c.IncidentsTable, c.Bucket)
	errs = append(errs, inline(c.InlineBytes)...)
	for _, name := range top.TopicNames() {
		if c.DLQARNs[name] == "" {
			errs = append(errs, fmt.Errorf("%s has no DLQ ARN for topic %q", EnvDLQARNs, name))
		}
	}
	return errors.Join(errs...)
}

// NewArchiver builds the DLQ archiver. Without an alert topic, alerts are
// warning log lines.
func NewArchiver(c ArchiverConfig, cl Clients, log *slog.Logger, metrics *metric.Emitter) *archiver.Archiver {
	blobs := &blob.S3{Client: cl.S3}
	topics := map[string]string{}
	for topic, arn := range c.DLQARNs {
		topics[arn] = topic
	}
	var alerts archiver.Alerter = archiver.LogAlerter{Log: log}
	if c.AlertTopicARN != "" {
		alerts = &alert.SNS{Client: cl.SNS, TopicARN: c.AlertTopicARN, Stage: c.Stage}
	}
	return &archiver.Archiver{
		Incidents: &dynamo.Incidents{Client: cl.DynamoDB, Table: c.IncidentsTable},
		Rows:      &dynamo.Events{Client: cl.DynamoDB, Table: c.EventsTable, Log: log},
		Bodies:    &incident.Bodies{Store: blobs, Bucket: c.Bucket, Threshold: c.InlineBytes},
		DLQTopics: topics,
		Alerts:    alerts,
		Metrics:   metrics,
		Log:       log,
		Now:       time.Now,
	}
}

// ReplayConfig configures the replay function.
type ReplayConfig struct {
	EventsTable     string
	IncidentsTable  string
	Bucket          string
	QueueURLs       map[string]string
	ClaimCheckBytes int
	Retention       time.Duration
	Concurrency     int
}

// LoadReplayConfig reads and validates the replay config.
func LoadReplayConfig(r *envconf.Reader, top topology.Topology) (ReplayConfig, error) {
	c := ReplayConfig{
		EventsTable:     r.String(EnvEventsTable, ""),
		IncidentsTable:  r.String(EnvIncidentsTable, ""),
		Bucket:          r.String(EnvBucket, ""),
		ClaimCheckBytes: r.Int(EnvClaimCheckBytes, claimcheck.DefaultThreshold),
		Retention:       r.Duration(EnvRetention, ingest.DefaultRetention),
		Concurrency:     r.Int(EnvReplayConcurrency, 8),
	}
	r.JSON(EnvQueueURLs, &c.QueueURLs)
	if err := r.Err(); err != nil {
		return c, err
	}
	return c, c.Validate(top)
}

// Validate checks the replay config.
func (c ReplayConfig) Validate(top topology.Topology) error {
	errs := recoveryTables(c.EventsTable, c.IncidentsTable, c.Bucket)
	errs = append(errs, queueURLs(c.QueueURLs, top)...)
	if c.ClaimCheckBytes <= 0 || c.ClaimCheckBytes > 256<<10 {
		errs = append(errs, fmt.Errorf("%s must be 1..256 KiB", EnvClaimCheckBytes))
	}
	if c.Retention < 7*24*time.Hour {
		errs = append(errs, fmt.Errorf("%s must be at least 7 days", EnvRetention))
	}
	if c.Concurrency < 1 || c.Concurrency > 64 {
		errs = append(errs, fmt.Errorf("%s must be 1..64", EnvReplayConcurrency))
	}
	return errors.Join(errs...)
}

// NewReplay builds the replay service (and operator views).
func NewReplay(c ReplayConfig, top topology.Topology, cl Clients, log *slog.Logger) *replay.Service {
	blobs := &blob.S3{Client: cl.S3}
	return &replay.Service{
		Incidents:   &dynamo.Incidents{Client: cl.DynamoDB, Table: c.IncidentsTable},
		Events:      &dynamo.Events{Client: cl.DynamoDB, Table: c.EventsTable, Log: log},
		Bodies:      &incident.Bodies{Store: blobs, Bucket: c.Bucket},
		ClaimCheck:  claimcheck.Checker{Store: blobs, Bucket: c.Bucket, Threshold: c.ClaimCheckBytes},
		Sender:      topicSender(cl, c.QueueURLs, top),
		Topology:    top,
		Retention:   c.Retention,
		Concurrency: c.Concurrency,
		Now:         time.Now,
		Log:         log,
		// A replay's trace continues into the consumer (AWSTraceHeader).
		TraceHeader: trace.Header,
	}
}

func topicSender(cl Clients, urls map[string]string, top topology.Topology) *queue.Sender {
	fifo := map[string]bool{}
	for _, tp := range top.Topics {
		fifo[tp.Name] = tp.FIFO
	}
	return &queue.Sender{Client: cl.SQS, URLs: urls, FIFO: fifo}
}

func recoveryTables(events, incidents, bucket string) []error {
	var errs []error
	if events == "" {
		errs = append(errs, fmt.Errorf("%s is required", EnvEventsTable))
	}
	if incidents == "" {
		errs = append(errs, fmt.Errorf("%s is required", EnvIncidentsTable))
	}
	if bucket == "" {
		errs = append(errs, fmt.Errorf("%s is required (incident bodies over the inline limit, claim-checked payloads)", EnvBucket))
	}
	return errs
}

func queueURLs(urls map[string]string, top topology.Topology) []error {
	var errs []error
	for _, name := range top.TopicNames() {
		if urls[name] == "" {
			errs = append(errs, fmt.Errorf("%s has no queue URL for topic %q", EnvQueueURLs, name))
		}
	}
	return errs
}

func inline(n int) []error {
	if n < 1<<10 || n > 300<<10 {
		return []error{fmt.Errorf("%s must be 1..300 KiB (it must fit a DynamoDB item with the incident)", EnvIncidentInlineBytes)}
	}
	return nil
}
