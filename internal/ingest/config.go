package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/siteswarm/eventplatform/internal/claimcheck"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// Config tunes the ingestion core. Zero values take the defaults
// (WithDefaults); Validate states every limit.
type Config struct {
	// Limits bound what is accepted (payload size, timestamp skew).
	Limits envelope.Limits
	// Retention is how long ledger items (the dedupe window) are kept.
	Retention time.Duration
	// Lease is how long a sender holds a fresh row before the sweeper may
	// assume it crashed. It must exceed the ingest function's timeout.
	Lease time.Duration
	// RetryDelay is when a failed optimistic send becomes due for the
	// sweeper (now + 2 minutes).
	RetryDelay time.Duration
	// BatchDueAfter is when the sweeper first looks at the rows of a batch
	// (PublishBatch): at least Lease, default 10 minutes. Their sends are
	// on the batch's receipt, and a bulk import runs ahead of its
	// consumer: each row the sweeper finds still unclaimed costs a write
	// (outbox.Receipts). A batch call that died before its sends is
	// re-driven by the caller's retry once the lease ends (a duplicate's
	// re-drive), or by the sweeper after BatchDueAfter.
	BatchDueAfter time.Duration
	// LegacyKeysUntil: until then, a commit also checks that the event is
	// not stored under its legacy (unscoped) key, for stages that stored
	// events before ids were scoped by tenant (see ledger.LegacyKey). Zero
	// for stages that never did.
	LegacyKeysUntil time.Time
}

// Defaults.
const (
	DefaultLease      = 60 * time.Second
	DefaultRetryDelay = 2 * time.Minute
	// DefaultBatchDueAfter covers a local 100,000-record import's
	// consumer catching up (about 5 minutes, docs/jobs.md) twice.
	DefaultBatchDueAfter = 10 * time.Minute
	// MaxPayloadLimit is the largest payload limit: Lambda's synchronous
	// invoke takes 6 MB.
	MaxPayloadLimit = 5 << 20
	minLease        = 5 * time.Second
)

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	def := envelope.DefaultLimits()
	if c.Limits.MaxPayloadBytes == 0 {
		c.Limits.MaxPayloadBytes = def.MaxPayloadBytes
	}
	if c.Limits.MaxFutureSkew == 0 {
		c.Limits.MaxFutureSkew = def.MaxFutureSkew
	}
	if c.Retention == 0 {
		c.Retention = ledger.DefaultRetention
	}
	if c.Lease == 0 {
		c.Lease = DefaultLease
	}
	if c.RetryDelay == 0 {
		c.RetryDelay = DefaultRetryDelay
	}
	if c.BatchDueAfter == 0 {
		c.BatchDueAfter = DefaultBatchDueAfter
	}
	return c
}

// Validate checks the config.
func (c Config) Validate() error {
	var errs []error
	if c.Limits.MaxPayloadBytes < 1 || c.Limits.MaxPayloadBytes > MaxPayloadLimit {
		errs = append(errs, fmt.Errorf("ingest: payload limit %d must be 1..%d bytes (Lambda's 6 MB invoke limit)", c.Limits.MaxPayloadBytes, MaxPayloadLimit))
	}
	if c.Limits.MaxFutureSkew <= 0 {
		errs = append(errs, errors.New("ingest: the future timestamp skew must be positive"))
	}
	if err := ledger.CheckRetention(c.Retention); err != nil {
		errs = append(errs, fmt.Errorf("ingest: %w", err))
	}
	if c.Lease < minLease {
		errs = append(errs, fmt.Errorf("ingest: dispatch lease %s must be at least %s (it must outlast a send)", c.Lease, minLease))
	}
	if c.RetryDelay <= 0 {
		errs = append(errs, errors.New("ingest: the retry delay must be positive"))
	}
	if c.BatchDueAfter < c.Lease {
		errs = append(errs, fmt.Errorf("ingest: a batch's due time %s must be at least the dispatch lease %s", c.BatchDueAfter, c.Lease))
	}
	return errors.Join(errs...)
}

// Deps are what the ingestion core talks to.
type Deps struct {
	Topology   topology.Topology
	Ledger     Ledger
	Outbox     outbox.Store
	Sender     outbox.Sender
	ClaimCheck claimcheck.Checker
	// Payloads deletes the claim-checked payload a retry of an erased
	// event stored (every version of the object).
	Payloads claimcheck.Eraser
	Log      *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// TraceHeader returns the trace header to carry into SQS for the
	// current request (nil: none).
	TraceHeader func(context.Context) string
	// Later runs work after the caller has its answer (the Lambda wiring:
	// afterward.Go): a single publish records its sends (the enqueued
	// marks) there, off the answer's critical path; the answer still waits
	// for the sends themselves. Nil: the marks are written before Publish
	// returns.
	Later func(ctx context.Context, work func(context.Context))
}

// New builds the ingestion core; it refuses a config or dependencies that
// cannot work.
func New(cfg Config, d Deps) (*Service, error) {
	cfg = cfg.WithDefaults()
	errs := []error{cfg.Validate(), d.Topology.Validate(), d.ClaimCheck.Validate()}
	if d.Ledger == nil || d.Outbox == nil || d.Sender == nil || d.Payloads == nil {
		errs = append(errs, errors.New("ingest: Ledger, Outbox, Sender and Payloads are required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	d.Now, d.Log = clock.Or(d.Now), logging.OrDiscard(d.Log)
	return &Service{cfg: cfg, d: d}, nil
}
