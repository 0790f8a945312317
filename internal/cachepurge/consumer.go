package cachepurge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
)

// Content events whose payload tags become purges.
const (
	TypeContentPublished = "content.published"
	TypeContentDeleted   = "content.deleted"
)

// Codes of messages the consumer cannot act on (they go to the DLQ).
const (
	CodeInvalidMessage   = "invalid_purge_request"
	CodeUnsupportedEvent = "unsupported_event"
)

// Metric names (EMF, namespace EventPlatform).
const (
	MetricJobsCompleted = "PurgeJobsCompleted"
	MetricTags          = "PurgeTagsPurged"
	MetricAPICalls      = "PurgeAPICalls"
	MetricRetries       = "PurgeRetries"
	MetricRetries429    = "PurgeRetries429"
	MetricFailures      = "PurgeFailures"
	MetricPaced         = "PurgeCallsPaced"
	MetricPacedMs       = "PurgePacingDelay"
)

// Zones maps tenants to their CDN zone: Zones by tenant, else Default
// (one zone serving every tenant's site), else none (the job fails:
// unknown zone).
type Zones struct {
	ByTenant map[string]string `json:"zones,omitempty"`
	Default  string            `json:"default,omitempty"`
}

// For is tenant's zone ("" for none).
func (z Zones) For(tenant string) string {
	if v := z.ByTenant[tenant]; v != "" {
		return v
	}
	return z.Default
}

// ConsumerConfig tunes the purge consumer.
type ConsumerConfig struct {
	Zones Zones
	// MaxAttempts a job is tried (1..MaxAttempts; the topic's
	// maxReceiveCount must be at least this).
	MaxAttempts int
	// Concurrency bounds tenant groups purged at once (1..10).
	Concurrency int
}

// WithDefaults fills unset fields.
func (c ConsumerConfig) WithDefaults() ConsumerConfig {
	if c.MaxAttempts == 0 {
		c.MaxAttempts = MaxAttempts
	}
	if c.Concurrency == 0 {
		c.Concurrency = 4
	}
	return c
}

// Validate checks the config.
func (c ConsumerConfig) Validate() error {
	var errs []error
	if c.MaxAttempts < 1 || c.MaxAttempts > MaxAttempts {
		errs = append(errs, fmt.Errorf("purge: max attempts %d must be 1..%d", c.MaxAttempts, MaxAttempts))
	}
	if c.Concurrency < 1 || c.Concurrency > 10 {
		errs = append(errs, fmt.Errorf("purge: concurrency %d must be 1..10", c.Concurrency))
	}
	if len(c.Zones.ByTenant) == 0 && c.Zones.Default == "" {
		errs = append(errs, errors.New("purge: no zones (give each tenant its zone, or a default)"))
	}
	return errors.Join(errs...)
}

// ConsumerDeps are what the consumer talks to.
type ConsumerDeps struct {
	Jobs      Jobs
	Telemetry Telemetry
	API       API
	// Pacer spaces API calls (shared by the function's invocations).
	Pacer   *Pacer
	Metrics *metric.Emitter
	Now     func() time.Time
	Log     *slog.Logger
}

// Consumer is the cache.purge topic's batch handler.
type Consumer struct {
	cfg ConsumerConfig
	d   ConsumerDeps
}

var _ consume.BatchHandler = (*Consumer)(nil)

// NewConsumer builds the consumer; it refuses a config or dependencies that
// cannot work.
func NewConsumer(cfg ConsumerConfig, d ConsumerDeps) (*Consumer, error) {
	cfg = cfg.WithDefaults()
	errs := []error{cfg.Validate()}
	if d.Jobs == nil || d.Telemetry == nil || d.API == nil {
		errs = append(errs, errors.New("purge: Jobs, Telemetry and API are required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	d.Now, d.Log = clock.Or(d.Now), logging.OrDiscard(d.Log)
	if d.Pacer == nil {
		d.Pacer = NewPacer(0, d.Now)
	}
	if d.Metrics == nil {
		d.Metrics = metric.Discard()
	}
	return &Consumer{cfg: cfg, d: d}, nil
}

// item is one message's job.
type item struct {
	i       int
	job     Job
	attempt int
	replay  bool
}

// HandleBatch purges a batch (spec 001 §4, tier 2): messages grouped by
// tenant, each group's tags unioned and sent in chunks of at most 100, one
// chunk after the other, every job of the group advancing together. It
// returns one error per message: nil (acknowledged), a retry with the
// spec's delay, or permanent (the job failed for good; the message goes to
// the DLQ, where its incident can replay it).
func (c *Consumer) HandleBatch(ctx context.Context, ms []consume.Message) []error {
	errs := make([]error, len(ms))
	groups := map[string][]item{}
	var order []string
	for i, m := range ms {
		it, err := c.item(ctx, i, m)
		if err != nil || it == nil {
			errs[i] = err
			continue
		}
		if _, ok := groups[it.job.TenantID]; !ok {
			order = append(order, it.job.TenantID)
		}
		groups[it.job.TenantID] = append(groups[it.job.TenantID], *it)
	}
	sem := make(chan struct{}, c.cfg.Concurrency)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, tenant := range order {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out := c.purgeGroup(ctx, tenant, groups[tenant])
			mu.Lock()
			for i, err := range out {
				errs[i] = err
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return errs
}

// item reads a message's job: a purge request's, or the one a content event
// with tags asks for (created on first sight). nil, nil: nothing to do.
func (c *Consumer) item(ctx context.Context, i int, m consume.Message) (*item, error) {
	ev := m.Event
	var job Job
	switch ev.Type {
	case TypeRequested:
		var r Request
		if err := strictJSON(ev.Payload, &r); err != nil {
			return nil, consume.Permanent(CodeInvalidMessage, fmt.Errorf("purge request payload: %w", err))
		}
		if r.TenantID != ev.TenantID || !ValidJobID(r.JobID) {
			return nil, consume.Permanent(CodeInvalidMessage, errors.New("purge request: jobId or tenantId does not match the event"))
		}
		tags, rerr := NormalizeTags(r.TenantID, r.Tags)
		if rerr != nil {
			return nil, consume.Permanent(CodeInvalidMessage, rerr)
		}
		job = Job{JobID: r.JobID, TenantID: r.TenantID, Tags: tags, Status: StatusQueued, EnqueuedAt: ev.Timestamp.UTC(), EventID: ev.ID}
	case TypeContentPublished, TypeContentDeleted:
		var p struct {
			Tags *[]string `json:"tags"`
		}
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			return nil, consume.Permanent(CodeInvalidMessage, fmt.Errorf("content event payload: tags must be a list of strings: %w", err))
		}
		if p.Tags == nil {
			return nil, nil // a content change without cache tags purges nothing
		}
		tags, rerr := NormalizeTags(ev.TenantID, *p.Tags)
		if rerr != nil {
			return nil, consume.Permanent(CodeInvalidMessage, rerr)
		}
		// Enqueued when first seen here (the event's own timestamp is when
		// the content changed, possibly long before).
		job = Job{JobID: JobIDForEvent(ev.TenantID, ev.ID), TenantID: ev.TenantID, Tags: tags, Status: StatusQueued, EnqueuedAt: c.d.Now().UTC(), EventID: ev.ID}
	default:
		return nil, consume.Permanent(CodeUnsupportedEvent, fmt.Errorf("the purge consumer does not handle %s events", ev.Type))
	}
	// The message is the source of truth: a job record that expired or was
	// never written (a request published by hand) is recreated from it.
	stored, _, err := c.d.Jobs.Ensure(ctx, job)
	if err != nil {
		return nil, consume.Retry(fmt.Errorf("purge: read job %s: %w", job.JobID, err))
	}
	if stored.TenantID != job.TenantID {
		// The stored job is trusted for its tags (ingress coalesces into
		// it), so it must be the message's tenant's: a request from one
		// tenant naming another's job id would purge the other's tags.
		// Refused for good; the DLQ's incident keeps the message.
		c.d.Log.ErrorContext(ctx, "purge: refused a message naming another tenant's job",
			"jobId", job.JobID, "eventId", ev.ID, "tenantId", ev.TenantID, "jobTenantId", stored.TenantID)
		return nil, consume.Permanent(consume.CodeTenantMismatch,
			fmt.Errorf("purge: event %s of tenant %s names job %s, which is another tenant's", ev.ID, ev.TenantID, job.JobID))
	}
	if stored.Status == StatusCompleted && m.ReplayOf == "" {
		return nil, nil // done already (a redelivery): acknowledge
	}
	return &item{i: i, job: stored, attempt: max(m.ReceiveCount, 1), replay: m.ReplayOf != ""}, nil
}

// purgeGroup purges one tenant's jobs together and returns each message's
// outcome by batch index.
func (c *Consumer) purgeGroup(ctx context.Context, tenant string, items []item) map[int]error {
	out := make(map[int]error, len(items))
	var union []string
	for _, it := range items {
		union = append(union, it.job.Tags...)
	}
	slices.Sort(union)
	union = slices.Compact(union)
	ids := make([]string, len(items))
	for k, it := range items {
		ids[k] = it.job.JobID
	}
	log := c.d.Log.With("tenantId", tenant, "jobs", len(items), "tags", len(union))

	zone := c.cfg.Zones.For(tenant)
	if zone == "" {
		c.fail(ctx, log, items, out, outcome{err: &Error{Code: CodeUnknownZone, Message: "no cache zone is configured for tenant " + tenant}})
		return out
	}
	now := c.d.Now().UTC()
	for k := range items {
		j := &items[k].job
		j.Status, j.RetryCount = StatusProcessing, ptr(items[k].attempt-1)
		if j.StartedAt == nil || items[k].replay {
			j.StartedAt = &now
		}
		j.CompletedAt, j.FailedAt = nil, nil
		c.save(ctx, log, *j)
	}

	calls, paced, waited := 0, 0, time.Duration(0)
	defer func() {
		if paced > 0 {
			// Calls the shared rate limit held back: a tenant's burst
			// waits its turn instead of starving the others.
			c.d.Metrics.Emit(nil,
				metric.Metric{Name: MetricPaced, Unit: metric.Count, Value: float64(paced)},
				metric.Metric{Name: MetricPacedMs, Unit: metric.Milliseconds, Value: float64(waited.Milliseconds())})
		}
	}()
	for _, chunk := range Chunks(union) {
		w, err := c.d.Pacer.Wait(ctx)
		if w > 0 {
			paced, waited = paced+1, waited+w
		}
		if err != nil {
			c.retry(ctx, log, items, out, outcome{retryable: true, err: &Error{Code: CodeAPIUnavailable, Message: "out of time waiting for the API's pace: " + err.Error()}})
			return out
		}
		res, err := c.d.API.Purge(ctx, Call{TenantID: tenant, Zone: zone, Tags: chunk, JobIDs: ids})
		calls++
		if err != nil {
			o := classify(err)
			c.d.Pacer.Observe(o.rateLimit)
			c.d.Metrics.Emit(nil, metric.Metric{Name: MetricAPICalls, Unit: metric.Count, Value: float64(calls)})
			if o.retryable {
				c.retry(ctx, log, items, out, o)
			} else {
				c.fail(ctx, log, items, out, o)
			}
			return out
		}
		c.d.Pacer.Observe(res.RateLimit)
	}

	done := c.d.Now().UTC()
	for _, it := range items {
		j := it.job
		j.Status, j.CompletedAt, j.Purged, j.Error = StatusCompleted, &done, ptr(len(j.Tags)), nil
		c.save(ctx, log, j)
		out[it.i] = nil
	}
	c.count(ctx, log, Counts{TenantID: tenant, Purges: len(items), Tags: len(union)})
	c.d.Metrics.Emit(nil,
		metric.Metric{Name: MetricJobsCompleted, Unit: metric.Count, Value: float64(len(items))},
		metric.Metric{Name: MetricTags, Unit: metric.Count, Value: float64(len(union))},
		metric.Metric{Name: MetricAPICalls, Unit: metric.Count, Value: float64(calls)})
	log.InfoContext(ctx, "purge: jobs completed", "jobIds", ids, "calls", calls)
	return out
}

// retry schedules each message's next attempt, or fails its job for good
// after its last one.
func (c *Consumer) retry(ctx context.Context, log *slog.Logger, items []item, out map[int]error, o outcome) {
	var retried, limited []item
	var final []item
	for _, it := range items {
		if it.attempt >= c.cfg.MaxAttempts {
			final = append(final, it)
			continue
		}
		retried = append(retried, it)
		if o.limited {
			limited = append(limited, it)
		}
	}
	for _, it := range retried {
		j := it.job
		j.RetryCount, j.Error = ptr(it.attempt), o.err
		c.save(ctx, log, j)
		delay := Delay(it.attempt, o.retryAfter)
		out[it.i] = consume.RetryAfter(errors.New(o.err.Message), delay)
		log.WarnContext(ctx, "purge: retrying", "jobId", j.JobID, "attempt", it.attempt, "delay", delay.String(), "error", o.err.Message)
	}
	if len(retried) > 0 {
		c.count(ctx, log, Counts{TenantID: items[0].job.TenantID, Retries429: len(limited)})
		c.d.Metrics.Emit(nil, metric.Metric{Name: MetricRetries, Unit: metric.Count, Value: float64(len(retried))},
			metric.Metric{Name: MetricRetries429, Unit: metric.Count, Value: float64(len(limited))})
	}
	if len(final) > 0 {
		cause := o.err.Message
		c.fail(ctx, log, final, out, outcome{err: &Error{Code: CodeMaxRetriesExceeded, Status: o.err.Status,
			Message: fmt.Sprintf("gave up after %d attempts; last: %s", c.cfg.MaxAttempts, cause)}})
	}
}

// fail marks each job failed for good, mirrors it as a dead letter and
// sends its message to the DLQ (an incident an operator can replay once
// the cause is fixed).
func (c *Consumer) fail(ctx context.Context, log *slog.Logger, items []item, out map[int]error, o outcome) {
	now := c.d.Now().UTC()
	for _, it := range items {
		j := it.job
		j.Status, j.FailedAt, j.Error, j.RetryCount = StatusFailed, &now, o.err, ptr(it.attempt-1)
		c.save(ctx, log, j)
		dl := DeadLetter{JobID: j.JobID, TenantID: j.TenantID, Tags: j.Tags, EnqueuedAt: j.EnqueuedAt, FailedAt: now, Attempts: it.attempt, Error: o.err}
		if err := c.d.Telemetry.DeadLetter(ctx, dl); err != nil {
			log.ErrorContext(ctx, "purge: could not mirror a dead letter", "jobId", j.JobID, "error", err)
		}
		diag, _ := json.Marshal(dl)
		out[it.i] = consume.Permanent(o.err.Code, errors.New(string(diag)))
		log.ErrorContext(ctx, "purge: job failed", "jobId", j.JobID, "code", o.err.Code, "error", o.err.Message)
	}
	c.count(ctx, log, Counts{TenantID: items[0].job.TenantID, Failures: len(items)})
	c.d.Metrics.Emit(nil, metric.Metric{Name: MetricFailures, Unit: metric.Count, Value: float64(len(items))})
}

// save writes a job's new state; a failed write only leaves the status
// view behind (the message's outcome decides what happens next).
func (c *Consumer) save(ctx context.Context, log *slog.Logger, j Job) {
	if err := c.d.Jobs.Save(ctx, j); err != nil {
		log.ErrorContext(ctx, "purge: could not record the job's status", "jobId", j.JobID, "status", j.Status, "error", err)
	}
}

func (c *Consumer) count(ctx context.Context, log *slog.Logger, n Counts) {
	n.Day = c.d.Now().UTC().Format(time.DateOnly)
	if err := c.d.Telemetry.Count(ctx, n); err != nil {
		log.ErrorContext(ctx, "purge: could not count", "error", err)
	}
}

func strictJSON(raw []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(dst)
}

func ptr[T any](v T) *T { return &v }
