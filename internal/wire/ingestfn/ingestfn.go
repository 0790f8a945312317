// Package ingestfn wires the ingest function: environment → Config,
// DynamoDB, SQS and S3 clients, the ingestion core (internal/ingest).
package ingestfn

import (
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/s3blob"
	"github.com/siteswarm/eventplatform/internal/aws/sqsqueue"
	"github.com/siteswarm/eventplatform/internal/claimcheck"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/kit/afterward"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/kit/zdict"
	"github.com/siteswarm/eventplatform/internal/observe/trace"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/dataclients"
)

// Name is the function's name (the local stack's, and the role in logs).
const Name = "ingest"

// Ingest's own environment variables (besides EVENTS_TABLE,
// ARCHIVE_BUCKET, TOPIC_QUEUE_URLS, LEDGER_RETENTION and CLAIM_CHECK_BYTES).
const (
	EnvMaxPayloadBytes = "MAX_PAYLOAD_BYTES"
	EnvMaxFutureSkew   = "MAX_FUTURE_SKEW"
	EnvDispatchLease   = "DISPATCH_LEASE"
	EnvRetryDelay      = "DISPATCH_RETRY_DELAY"
	// EnvBatchDueAfter is ingest.Config.BatchDueAfter.
	EnvBatchDueAfter = "DISPATCH_BATCH_DUE_AFTER"
	// EnvLegacyKeysUntil (RFC 3339): until then ingest also checks an
	// event's legacy, unscoped ledger key, for stages that stored events
	// before ids were scoped by tenant. Set it to the upgrade's deploy time
	// plus the ledger retention; leave it unset on new stages.
	EnvLegacyKeysUntil = "LEDGER_LEGACY_KEYS_UNTIL"
)

// FunctionTimeout is ingest's Lambda timeout: a commit and one send, with
// room for SDK retries; the dispatch lease must exceed it.
const FunctionTimeout = 10 * time.Second

// Config is the ingest function's configuration.
type Config struct {
	Ingest          ingest.Config
	Topology        topology.Topology
	EventsTable     string
	Bucket          string
	QueueURLs       map[string]string
	ClaimCheckBytes int
}

// Load reads the config from the environment and validates it.
func Load(r *envconf.Reader, top topology.Topology) (Config, error) {
	c := Config{
		Topology:        top,
		EventsTable:     wire.Required(r, wire.EnvEventsTable, ""),
		Bucket:          wire.Required(r, wire.EnvBucket, "claim-checked payloads"),
		QueueURLs:       wire.TopicMap(r, wire.EnvQueueURLs, top, "queue URL"),
		ClaimCheckBytes: r.Int(wire.EnvClaimCheckBytes, claimcheck.DefaultThreshold),
	}
	c.Ingest.Limits.MaxPayloadBytes = r.Int(EnvMaxPayloadBytes, 0)
	c.Ingest.Limits.MaxFutureSkew = r.Duration(EnvMaxFutureSkew, 0)
	c.Ingest.Retention = r.Duration(wire.EnvRetention, 0)
	c.Ingest.Lease = r.Duration(EnvDispatchLease, 0)
	c.Ingest.RetryDelay = r.Duration(EnvRetryDelay, 0)
	c.Ingest.BatchDueAfter = r.Duration(EnvBatchDueAfter, 0)
	if v := r.String(EnvLegacyKeysUntil, ""); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			r.Fail(fmt.Errorf("%s=%q: not an RFC 3339 time", EnvLegacyKeysUntil, v))
		}
		c.Ingest.LegacyKeysUntil = t
	}
	c.Ingest = c.Ingest.WithDefaults()
	if err := r.Err(); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// Validate checks the config with the components' own checks.
func (c Config) Validate() error {
	return errors.Join(
		wire.FromVars(c.Ingest.Validate(), EnvMaxPayloadBytes, EnvMaxFutureSkew, wire.EnvRetention, EnvDispatchLease, EnvRetryDelay, EnvBatchDueAfter),
		wire.FromVars(claimcheck.CheckThreshold(c.ClaimCheckBytes), wire.EnvClaimCheckBytes),
	)
}

// Clients are the AWS services ingest calls: the data path's bundle.
type Clients = dataclients.Clients

// NewClients builds them from one aws.Config.
func NewClients(cfg aws.Config) Clients { return dataclients.New(cfg) }

// Deps are the ingestion core's dependencies over the clients.
func Deps(c Config, cl Clients, rt wire.Runtime) ingest.Deps {
	rt = rt.WithDefaults()
	events := &dynamo.Events{Client: cl.DynamoDB, Table: c.EventsTable, Log: rt.Log}
	blobs := &s3blob.S3{Client: cl.S3}
	return ingest.Deps{
		Topology:   c.Topology,
		Ledger:     events,
		Outbox:     events,
		Sender:     &sqsqueue.Sender{Client: cl.SQS, URLs: c.QueueURLs, FIFO: c.Topology.FIFOTopics()},
		ClaimCheck: claimcheck.Checker{Store: blobs, Bucket: c.Bucket, Threshold: c.ClaimCheckBytes},
		Payloads:   blobs,
		Log:        rt.Log,
		Now:        rt.Now,
		// The caller's trace continues into SQS (AWSTraceHeader); a no-op
		// unless tracing is on.
		TraceHeader: trace.Header,
		// The enqueued marks after the answer, in the same invocation
		// (functions/ingest registers the extension that holds the
		// execution environment for them; without it they run before the
		// answer).
		Later: afterward.Go,
	}
}

// New builds the ingestion service. It makes the payload compressor's
// encoders now, at cold start (where Lambda gives init more CPU than the
// handler gets), instead of in the first event's answer: ingest
// compresses every Stripe payload; their match tables come from the
// snapshots the binary carries (docs/payload-compression.md).
func New(c Config, cl Clients, rt wire.Runtime) (*ingest.Service, error) {
	if err := zdict.Warm(); err != nil {
		return nil, fmt.Errorf("ingest: payload dictionaries: %w", err)
	}
	return ingest.New(c.Ingest, Deps(c, cl, rt))
}
