package wire

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/siteswarm/eventplatform/internal/blob"
	"github.com/siteswarm/eventplatform/internal/claimcheck"
	"github.com/siteswarm/eventplatform/internal/dynamo"
	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/queue"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/trace"
)

// Environment variables shared by several functions (the CDK app sets them).
const (
	EnvEventsTable    = "EVENTS_TABLE"
	EnvIncidentsTable = "INCIDENTS_TABLE"
	EnvBucket         = "ARCHIVE_BUCKET"
	// EnvQueueURLs is a JSON object: topic name → queue URL.
	EnvQueueURLs = "TOPIC_QUEUE_URLS"
	// EnvDLQURLs is a JSON object: topic name → DLQ URL.
	EnvDLQURLs = "TOPIC_DLQ_URLS"
)

// Ingest-only environment variables.
const (
	EnvClaimCheckBytes = "CLAIM_CHECK_BYTES"
	EnvMaxPayloadBytes = "MAX_PAYLOAD_BYTES"
	EnvMaxFutureSkew   = "MAX_FUTURE_SKEW"
	EnvRetention       = "LEDGER_RETENTION"
	EnvDispatchLease   = "DISPATCH_LEASE"
	EnvRetryDelay      = "DISPATCH_RETRY_DELAY"
	// EnvLegacyKeysUntil (RFC 3339): until then ingest also checks an
	// event's legacy, unscoped ledger key, for stages that stored events
	// before ids were scoped by tenant. Set it to the upgrade's deploy
	// time plus the ledger retention; leave it unset on new stages.
	EnvLegacyKeysUntil = "LEDGER_LEGACY_KEYS_UNTIL"
)

// IngestConfig configures the ingest function.
type IngestConfig struct {
	EventsTable     string
	Bucket          string
	QueueURLs       map[string]string
	ClaimCheckBytes int
	MaxPayloadBytes int
	MaxFutureSkew   time.Duration
	Retention       time.Duration
	Lease           time.Duration
	RetryDelay      time.Duration
	LegacyKeysUntil time.Time
}

// LoadIngestConfig reads the ingest config from the environment, applies
// defaults and validates it against the topology.
func LoadIngestConfig(r *envconf.Reader, top topology.Topology) (IngestConfig, error) {
	lim := envelope.DefaultLimits()
	c := IngestConfig{
		EventsTable:     r.String(EnvEventsTable, ""),
		Bucket:          r.String(EnvBucket, ""),
		ClaimCheckBytes: r.Int(EnvClaimCheckBytes, claimcheck.DefaultThreshold),
		MaxPayloadBytes: r.Int(EnvMaxPayloadBytes, lim.MaxPayloadBytes),
		MaxFutureSkew:   r.Duration(EnvMaxFutureSkew, lim.MaxFutureSkew),
		Retention:       r.Duration(EnvRetention, ingest.DefaultRetention),
		Lease:           r.Duration(EnvDispatchLease, ingest.DefaultLease),
		RetryDelay:      r.Duration(EnvRetryDelay, ingest.DefaultRetryDelay),
	}
	r.JSON(EnvQueueURLs, &c.QueueURLs)
	if v := r.String(EnvLegacyKeysUntil, ""); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return c, fmt.Errorf("%s=%q: not an RFC 3339 time", EnvLegacyKeysUntil, v)
		}
		c.LegacyKeysUntil = t
	}
	if err := r.Err(); err != nil {
		return c, err
	}
	return c, c.Validate(top)
}

// Validate checks the config is complete and coherent.
func (c IngestConfig) Validate(top topology.Topology) error {
	var errs []error
	if c.EventsTable == "" {
		errs = append(errs, fmt.Errorf("%s is required", EnvEventsTable))
	}
	if c.Bucket == "" {
		errs = append(errs, fmt.Errorf("%s is required (claim-checked payloads)", EnvBucket))
	}
	for _, name := range top.TopicNames() {
		if c.QueueURLs[name] == "" {
			errs = append(errs, fmt.Errorf("%s has no queue URL for topic %q", EnvQueueURLs, name))
		}
	}
	if c.MaxPayloadBytes <= 0 || c.MaxPayloadBytes > 5<<20 {
		errs = append(errs, fmt.Errorf("%s must be 1..5 MiB (Lambda's 6 MB invoke limit)", EnvMaxPayloadBytes))
	}
	if c.ClaimCheckBytes <= 0 || c.ClaimCheckBytes > 256<<10 {
		errs = append(errs, fmt.Errorf("%s must be 1..256 KiB (it keeps ledger items and messages small)", EnvClaimCheckBytes))
	}
	if c.Retention < 7*24*time.Hour {
		errs = append(errs, fmt.Errorf("%s must be at least 7 days so provider retries still dedupe", EnvRetention))
	}
	if c.Lease < 5*time.Second {
		errs = append(errs, fmt.Errorf("%s must be at least 5s (it must outlast a send)", EnvDispatchLease))
	}
	if c.RetryDelay <= 0 {
		errs = append(errs, fmt.Errorf("%s must be positive", EnvRetryDelay))
	}
	if c.MaxFutureSkew <= 0 {
		errs = append(errs, fmt.Errorf("%s must be positive", EnvMaxFutureSkew))
	}
	return errors.Join(errs...)
}

// NewIngest builds the ingestion service.
func NewIngest(c IngestConfig, top topology.Topology, cl Clients, log *slog.Logger) *ingest.Service {
	events := &dynamo.Events{Client: cl.DynamoDB, Table: c.EventsTable, Log: log}
	fifo := map[string]bool{}
	for _, tp := range top.Topics {
		fifo[tp.Name] = tp.FIFO
	}
	return &ingest.Service{
		Topology:        top,
		Ledger:          events,
		Outbox:          events,
		Sender:          &queue.Sender{Client: cl.SQS, URLs: c.QueueURLs, FIFO: fifo},
		ClaimCheck:      claimcheck.Checker{Store: &blob.S3{Client: cl.S3}, Bucket: c.Bucket, Threshold: c.ClaimCheckBytes},
		Limits:          envelope.Limits{MaxPayloadBytes: c.MaxPayloadBytes, MaxFutureSkew: c.MaxFutureSkew},
		Retention:       c.Retention,
		Lease:           c.Lease,
		RetryDelay:      c.RetryDelay,
		LegacyKeysUntil: c.LegacyKeysUntil,
		Now:             time.Now,
		Log:             log,
		// The caller's trace continues into SQS (AWSTraceHeader); a no-op
		// unless tracing is on.
		TraceHeader: trace.Header,
	}
}
