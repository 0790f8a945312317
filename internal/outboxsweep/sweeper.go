package outboxsweep

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/subject"
)

// Backoff is the wait before the next sweep of a row that has failed
// attempts sends (docs/operations.md §5): base·2^attempts, with the
// default base of 2 minutes, so five attempts span about an hour (2 + 8 +
// 16 + 32 minutes after the first).
func Backoff(base time.Duration, attempts int) time.Duration {
	attempts = min(max(attempts, 0), 20)
	return base << attempts
}

// Sweeper sweeps the outbox (New builds it); Run is safe to call
// concurrently (two overlapping scheduled runs are expected).
type Sweeper struct {
	cfg Config
	d   Deps
}

// Report is the outcome of one run.
type Report struct {
	// Due is how many due rows the run found.
	Due int `json:"due"`
	// Sent rows reached their queue (and were marked enqueued).
	Sent int `json:"sent"`
	// Failed sends were recorded with a backoff (abandoned ones included).
	Failed int `json:"failed"`
	// Abandoned rows became dlq_abandoned with an incident.
	Abandoned int `json:"abandoned"`
	// Skipped rows were claimed by another sender first or moved on.
	Skipped int `json:"skipped"`
	// Errors are rows whose claim or outcome write failed (they are retried
	// once their lease expires).
	Errors int `json:"errors"`
	// OldestDueSeconds is the age of the oldest due row: the outbox lag.
	OldestDueSeconds float64 `json:"oldestDueSeconds"`
	// Drained is true when the run found no more due rows before its
	// budget ran out.
	Drained bool `json:"drained"`
	// Settled are processing rows whose consumer outcome write was lost,
	// moved to completed or dlq.
	Settled int `json:"settled"`
	// Deferred are processing rows found due whose lease may not be
	// settled yet: looked at again once it may.
	Deferred int `json:"deferred"`
	// Unindexed are enqueued rows found due (a consumer has not claimed
	// their message yet): out of the due index until it does.
	Unindexed int `json:"unindexed"`
	// Erased are sendable rows of erased events found due (no claim takes
	// them) or erased during their last send: out of the due index, no
	// incident.
	Erased int `json:"erased,omitempty"`
	// StuckReplays are replays reopened because they were not confirmed
	// within StuckAfter.
	StuckReplays int `json:"stuckReplays"`
	// FailedPartitions are sweeper index partitions that could not be read
	// this run (the others were swept).
	FailedPartitions []string `json:"failedPartitions,omitempty"`
}

// Handle is the Lambda handler for the EventBridge schedule.
func (s *Sweeper) Handle(ctx context.Context, _ events.EventBridgeEvent) (Report, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(DefaultBudget)
	}
	return s.Run(ctx, deadline.Add(-s.margin()))
}

// Run sweeps until no due row is left or the wall clock passes stopAt:
// due rows first (sends; processing rows to settle or look at later;
// enqueued ones out of the due index), then the legacy index's processing
// rows to settle, then stuck replays. A partition that cannot be read is
// reported and the rest still swept; Run's error is for a run that could
// do nothing at all.
func (s *Sweeper) Run(ctx context.Context, stopAt time.Time) (Report, error) {
	now := s.d.Now()
	// The due index, and the legacy index's sendable partitions.
	m := newMerger(s.d.Rows, append([]outbox.Status{""}, outbox.Sendable...), now, s.pageSize())
	var (
		rep    Report
		oldest time.Time
	)
	for {
		if time.Now().After(stopAt) || ctx.Err() != nil {
			break
		}
		batch := m.take(ctx, s.batchSize())
		if len(batch) == 0 {
			rep.Drained = true
			break
		}
		var sends, looks []outbox.Row
		for _, row := range batch {
			if slices.Contains(outbox.Sendable, row.Status) && row.ErasedAt.IsZero() {
				sends = append(sends, row)
				continue
			}
			looks = append(looks, row)
		}
		s.lookAll(ctx, looks, now, &rep)
		if len(sends) == 0 {
			continue
		}
		if oldest.IsZero() {
			oldest = sends[0].NextRetryAt // the merge is oldest first
		}
		rep.Due += len(sends)
		s.sweep(ctx, sends, &rep)
	}
	if !oldest.IsZero() {
		rep.OldestDueSeconds = now.Sub(oldest).Seconds()
	}
	sendFailed := len(m.failed)
	failed := maps.Clone(m.failed)
	if s.d.Incidents != nil {
		maps.Copy(failed, s.settleLegacy(ctx, now, stopAt, &rep))
		s.reopenStuck(ctx, now, stopAt, &rep)
	}
	for _, name := range slices.Sorted(maps.Keys(failed)) {
		rep.FailedPartitions = append(rep.FailedPartitions, name)
		s.d.Log.ErrorContext(ctx, "sweep: partition could not be read; the others were swept", "partition", name, "error", failed[name])
	}
	s.emit(rep, now, oldest)
	s.d.Log.InfoContext(ctx, "sweep: run finished", "due", rep.Due, "sent", rep.Sent, "failed", rep.Failed,
		"abandoned", rep.Abandoned, "skipped", rep.Skipped, "errors", rep.Errors, "drained", rep.Drained,
		"oldestDueSeconds", rep.OldestDueSeconds, "settled", rep.Settled, "deferred", rep.Deferred, "unindexed", rep.Unindexed, "erased", rep.Erased,
		"stuckReplays", rep.StuckReplays, "failedPartitions", len(rep.FailedPartitions))
	if sendFailed == len(m.streams) {
		return rep, fmt.Errorf("sweep: no partition could be read (%d failed)", sendFailed)
	}
	return rep, nil
}

// look handles a due row that is not sendable (or is a sendable row of an
// erased event: no claim takes it, so it leaves the index). A processing row whose
// consumer lease ended more than SettleAfter ago is settled; one whose
// lease has not is looked at again then (the claim keeps the row's due
// time, which ingest set to its dispatch lease's end). An enqueued row's
// message is on its queue: it leaves the due index until a consumer claims
// it. A row with an outcome should not be in the index; it leaves it.
func (s *Sweeper) look(ctx context.Context, row outbox.Row, now time.Time, rep *Report) {
	var at time.Time
	erased := !row.ErasedAt.IsZero() && slices.Contains(outbox.Sendable, row.Status)
	if row.Status == outbox.StatusProcessing {
		at = row.LeaseUntil.Add(s.settleAfter())
		if !at.After(now) {
			if s.d.Incidents != nil {
				s.settleOne(ctx, row, now, rep)
				return
			}
			at = now.Add(s.settleAfter()) // nothing to settle with
		}
	}
	ok, err := s.d.Rows.Reschedule(ctx, Reschedule{Seen: row, At: at, Now: now})
	switch {
	case err != nil:
		s.d.Log.WarnContext(ctx, "sweep: reschedule failed", "eventKey", row.Key, "topic", row.Topic, "error", err)
		rep.Errors++
	case !ok:
		rep.Skipped++
	case erased:
		// No claim takes an erased row (its consumer would refuse it): it
		// leaves the index instead of being skipped by every sweep.
		rep.Erased++
	case at.IsZero():
		rep.Unindexed++
	default:
		rep.Deferred++
	}
}

// lookAll looks at due rows that are not sends (look) as the sends go,
// Concurrency at a time: a consumer lagging past the dispatch lease puts
// its rows ahead of the stranded sends of every topic (the merge is
// oldest first), and one write after another a run got through about 100
// of them a second at in-region latency (BenchmarkSweepLaggingRows).
func (s *Sweeper) lookAll(ctx context.Context, rows []outbox.Row, now time.Time, rep *Report) {
	parts := make([]Report, len(rows))
	sem := make(chan struct{}, s.concurrency())
	var wg sync.WaitGroup
	for i, row := range rows {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			s.look(ctx, row, now, &parts[i])
		})
	}
	wg.Wait()
	for _, p := range parts {
		rep.Settled += p.Settled
		rep.Deferred += p.Deferred
		rep.Unindexed += p.Unindexed
		rep.Erased += p.Erased
		rep.Skipped += p.Skipped
		rep.Errors += p.Errors
	}
}

// settleLegacy settles the legacy index's processing rows whose consumer
// lease ended more than SettleAfter ago (rows in the due index are settled
// as they come due, by look).
func (s *Sweeper) settleLegacy(ctx context.Context, now, stopAt time.Time, rep *Report) map[string]error {
	m := newMerger(s.d.Rows, []outbox.Status{outbox.StatusProcessing}, now.Add(-s.settleAfter()), s.pageSize())
	for !time.Now().After(stopAt) && ctx.Err() == nil {
		batch := m.take(ctx, s.batchSize())
		if len(batch) == 0 {
			break
		}
		for _, row := range batch {
			s.settleOne(ctx, row, now, rep)
		}
	}
	return m.failed
}

// settleOne moves a processing row whose consumer lease ended more than
// SettleAfter ago to its outcome: the consumer acknowledged the message
// but could not record it (its write failed, or it died between the two).
// The message left the queue either after its side effect or into the
// DLQ; an incident newer than the claim tells the second.
func (s *Sweeper) settleOne(ctx context.Context, row outbox.Row, now time.Time, rep *Report) {
	log := s.d.Log.With("eventKey", row.Key, "tenantId", row.TenantID, "topic", row.Topic)
	to := outbox.StatusCompleted
	note := fmt.Sprintf("settled by the sweeper: the consumer's lease ended at %s without a recorded outcome and its message is gone, so it completed", row.LeaseUntil.UTC().Format(time.RFC3339))
	inc, err := s.d.Incidents.Get(ctx, incident.ID(row.Key, row.Topic))
	switch {
	case err == nil && !inc.LastFailedAt.Before(row.UpdatedAt):
		to = outbox.StatusDLQ
		note = fmt.Sprintf("settled by the sweeper: the consumer's lease ended at %s without a recorded outcome; the message was dead-lettered (incident %s)", row.LeaseUntil.UTC().Format(time.RFC3339), inc.ID)
	case err != nil && !errors.Is(err, incident.ErrNotFound):
		log.WarnContext(ctx, "sweep: cannot settle a processing row yet", "error", err)
		rep.Errors++
		return
	}
	ok, err := s.d.Rows.Settle(ctx, Settlement{Seen: row, Status: to, Note: note, Now: now})
	switch {
	case err != nil:
		log.WarnContext(ctx, "sweep: settle failed", "error", err)
		rep.Errors++
	case ok:
		rep.Settled++
		log.WarnContext(ctx, "sweep: processing row settled", "status", to, "leaseUntil", row.LeaseUntil)
	}
}

// reopenStuck reopens replays that stayed retrying longer than StuckAfter.
func (s *Sweeper) reopenStuck(ctx context.Context, now, stopAt time.Time, rep *Report) {
	cursor := ""
	for !time.Now().After(stopAt) && ctx.Err() == nil {
		page, err := s.d.Incidents.List(ctx, incident.Filter{Status: incident.StatusRetrying, Limit: incident.MaxPageSize, Cursor: cursor})
		if err != nil {
			s.d.Log.ErrorContext(ctx, "sweep: cannot list retrying incidents", "error", err)
			rep.Errors++
			return
		}
		for _, inc := range page.Incidents {
			if !inc.Stuck(now, s.stuckAfter()) {
				continue
			}
			_, changed, err := incident.ReopenStuck(ctx, s.d.Incidents, inc.ID, now, s.stuckAfter())
			switch {
			case err != nil:
				s.d.Log.ErrorContext(ctx, "sweep: cannot reopen a stuck replay", "incidentId", inc.ID, "error", err)
				rep.Errors++
			case changed:
				rep.StuckReplays++
				s.d.Log.WarnContext(ctx, "sweep: replay not confirmed in time; incident reopened", "incidentId", inc.ID,
					"eventId", inc.EventID, "tenantId", inc.TenantID, "topic", inc.Topic, "replayedAt", inc.ReplayedAt)
			}
		}
		if page.Cursor == "" {
			return
		}
		cursor = page.Cursor
	}
}

// outcome of one row.
type outcome int

const (
	outSkipped outcome = iota
	outSent
	outFailed
	outAbandoned
	outError
	// outErased: the event was erased; the row leaves the due index.
	outErased
)

func (s *Sweeper) sweep(ctx context.Context, batch []outbox.Row, rep *Report) {
	keys := make([]string, len(batch))
	for i, r := range batch {
		keys[i] = r.Key
	}
	records, err := s.d.Rows.Ledgers(ctx, keys)
	if err != nil {
		s.d.Log.ErrorContext(ctx, "sweep: load ledger items", "error", err)
		rep.Errors += len(batch)
		return
	}
	results := make([]outcome, len(batch))
	sem := make(chan struct{}, s.concurrency())
	var wg sync.WaitGroup
	for i, row := range batch {
		rec, ok := records[row.Key]
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i] = s.one(ctx, row, rec, ok)
		})
	}
	wg.Wait()
	for _, o := range results {
		switch o {
		case outSkipped:
			rep.Skipped++
		case outSent:
			rep.Sent++
		case outFailed:
			rep.Failed++
		case outAbandoned:
			rep.Failed++
			rep.Abandoned++
		case outError:
			rep.Errors++
		case outErased:
			rep.Erased++
		}
	}
}

func (s *Sweeper) one(ctx context.Context, row outbox.Row, rec ledger.Record, haveLedger bool) outcome {
	log := s.d.Log.With("eventId", row.EventID, "tenantId", row.TenantID, "topic", row.Topic)
	owner := newOwner()
	claimed, err := s.d.Rows.ClaimDue(ctx, DueClaim{Seen: row, Owner: owner, Now: s.d.Now(), Lease: s.lease()})
	if err != nil {
		log.WarnContext(ctx, "sweep: claim failed", "error", err)
		return outError
	}
	if !claimed {
		return outSkipped
	}
	if row.MaxAttempts > 0 && row.Attempts >= row.MaxAttempts {
		// Exhausted already (for example maxAttempts was lowered):
		// abandon without another send.
		f := outbox.Failure{Row: row.Ref(), EventID: row.EventID, Owner: owner, Attempts: row.Attempts, Err: row.LastError, Now: s.d.Now()}
		return s.abandon(ctx, log, f, row, rec, haveLedger)
	}
	if !haveLedger {
		// Cannot happen through ingest (the ledger item and its rows are
		// one transaction); TTL deletes items independently, though. The
		// failure is recorded like a failed send so the row still ends in
		// an incident rather than being retried forever.
		now := s.d.Now()
		f := outbox.Failure{Row: row.Ref(), EventID: row.EventID, Owner: owner, Attempts: row.Attempts + 1,
			Err: "ledger item missing: cannot rebuild the message", NextRetryAt: now.Add(Backoff(s.cfg.BackoffBase, row.Attempts+1)), Now: now}
		if row.MaxAttempts > 0 && f.Attempts >= row.MaxAttempts {
			return s.abandon(ctx, log, f, row, rec, false)
		}
		if err := s.d.Rows.MarkFailed(ctx, f); err != nil && !errors.Is(err, outbox.ErrLeaseLost) {
			return outError
		}
		return outFailed
	}
	msg, err := rec.Message(row.Topic)
	if err != nil {
		log.ErrorContext(ctx, "sweep: build message", "error", err)
		return outError
	}
	if s.d.TraceHeader != nil {
		msg.TraceHeader = s.d.TraceHeader(ctx)
	}
	st := &rowStore{Rows: s.d.Rows, s: s, ctx: ctx, log: log, row: row, rec: rec}
	d := &outbox.Dispatcher{Sender: s.d.Sender, Store: st, Now: s.d.Now, Log: s.d.Log}
	o := d.Dispatch(ctx, []outbox.Job{{Message: msg, Owner: owner, Attempts: row.Attempts, RetryDelay: Backoff(s.cfg.BackoffBase, row.Attempts+1)}})[0]
	switch {
	case o.Sent:
		return outSent
	case st.abandoned:
		return outAbandoned
	case st.erased:
		return outErased
	case o.MarkErr != nil:
		return outError
	}
	return outFailed
}

// rowStore hands the Dispatcher the sweeper's outcome writes: a failed send
// that uses up the row's last attempt abandons it instead of scheduling
// another retry.
type rowStore struct {
	Rows
	s         *Sweeper
	ctx       context.Context
	log       *slog.Logger
	row       outbox.Row
	rec       ledger.Record
	abandoned bool
	erased    bool
}

func (r *rowStore) Claim(context.Context, outbox.ClaimParams) (bool, error) {
	return false, errors.New("sweep: the dispatcher never claims")
}

func (r *rowStore) MarkFailed(ctx context.Context, f outbox.Failure) error {
	if r.row.MaxAttempts > 0 && f.Attempts >= r.row.MaxAttempts {
		switch r.s.abandon(ctx, r.log, f, r.row, r.rec, true) {
		case outAbandoned:
			r.abandoned = true
		case outErased:
			r.erased = true
		default:
			return fmt.Errorf("sweep: abandon %s failed", f.Row)
		}
		return nil
	}
	return r.Rows.MarkFailed(ctx, f)
}

func (s *Sweeper) abandon(ctx context.Context, log *slog.Logger, f outbox.Failure, row outbox.Row, rec ledger.Record, haveLedger bool) outcome {
	id := incident.ID(row.Key, row.Topic)
	dl := incident.DeadLetter{
		EventKey: row.Key, EventID: row.EventID, TenantID: row.TenantID, Topic: row.Topic, Type: row.Type,
		SourceQueue: incident.SourceOutbox, ErrorCode: incident.CodeOutboxExhausted,
		ErrorMessage: incident.MessageOutboxExhausted, ErrorDetail: f.Err,
		FailedAt: f.Now, By: incident.ActorSweeper,
	}
	var (
		body []byte
		ev   *envelope.Event
	)
	if haveLedger {
		dl.Source = rec.Event.Source
		names := subject.Names{Subject: rec.Event.Subject, Owner: rec.OrderingKey}.Normal()
		dl.Subject, dl.Owner = names.Subject, names.Owner
		msg, err := rec.Message(row.Topic)
		if err != nil {
			log.ErrorContext(ctx, "sweep: cannot build the abandoned message; the row is retried later", "error", err)
			return outError
		}
		body, ev = msg.Body, &rec.Event
	} else {
		dl.Raw = true // nothing to replay from
	}
	kept, copyErr, err := s.bodies().Capture(ctx, row.TenantID, id, body, ev)
	if err != nil {
		log.ErrorContext(ctx, "sweep: cannot keep the abandoned message; the row is retried later", "error", err)
		return outError
	}
	if copyErr != nil {
		dl.ErrorDetail += "; claim-checked payload not copied: " + copyErr.Error()
	}
	dl.Body = kept
	inc, err := s.d.Abandoner.Abandon(ctx, f, dl)
	if errors.Is(err, outbox.ErrErased) {
		// Erased while its last send was in flight: no incident. What was
		// kept for it (a body or payload copy too large to keep inline) is
		// under the incident's prefix, which the erasure deletes once the
		// writers that may have read the event before its marker are done
		// (jobkinds.WriterWindow: this run's invocation among them).
		log.InfoContext(ctx, "sweep: the event was erased during its last send; nothing abandoned to an incident")
		return outErased
	}
	if errors.Is(err, outbox.ErrLeaseLost) {
		return outSkipped
	}
	if err != nil {
		log.ErrorContext(ctx, "sweep: abandon failed; the row is retried after its lease", "error", err)
		return outError
	}
	log.WarnContext(ctx, "sweep: retries exhausted; dispatch abandoned to an incident",
		"incidentId", inc.ID, "attempts", f.Attempts, "lastError", f.Err)
	return outAbandoned
}

func (s *Sweeper) emit(rep Report, now, oldest time.Time) {
	if s.d.Metrics == nil {
		return
	}
	lag := 0.0
	if !oldest.IsZero() {
		lag = now.Sub(oldest).Seconds()
	}
	s.d.Metrics.Emit(map[string]string{"Function": "sweeper"},
		metric.Metric{Name: MetricDue, Unit: metric.Count, Value: float64(rep.Due)},
		metric.Metric{Name: MetricSent, Unit: metric.Count, Value: float64(rep.Sent)},
		metric.Metric{Name: MetricFailed, Unit: metric.Count, Value: float64(rep.Failed)},
		metric.Metric{Name: MetricAbandoned, Unit: metric.Count, Value: float64(rep.Abandoned)},
		metric.Metric{Name: MetricLag, Unit: metric.Seconds, Value: lag},
		metric.Metric{Name: MetricSettled, Unit: metric.Count, Value: float64(rep.Settled)},
		metric.Metric{Name: MetricStuckReplays, Unit: metric.Count, Value: float64(rep.StuckReplays)},
		metric.Metric{Name: MetricPartitionErrors, Unit: metric.Count, Value: float64(len(rep.FailedPartitions))},
	)
}

// Metric names the sweeper emits (namespace metric.DefaultNamespace,
// dimension Function=sweeper), one line per run.
const (
	MetricDue       = "OutboxDueRows"
	MetricSent      = "OutboxSweptSent"
	MetricFailed    = "OutboxSweptFailed"
	MetricAbandoned = "OutboxAbandoned"
	// MetricLag is the age of the oldest due row in seconds: alarm on it.
	MetricLag = "OutboxLagSeconds"
	// MetricSettled counts processing rows settled (a consumer's outcome
	// write was lost).
	MetricSettled = "OutboxRowsSettled"
	// MetricStuckReplays counts replays reopened as stuck: alarm on it.
	MetricStuckReplays = "ReplaysStuck"
	// MetricPartitionErrors counts index partitions a run could not read.
	MetricPartitionErrors = "SweepPartitionErrors"
)

func (s *Sweeper) bodies() *incident.Bodies   { return s.d.Bodies }
func (s *Sweeper) lease() time.Duration       { return s.cfg.Lease }
func (s *Sweeper) settleAfter() time.Duration { return s.cfg.SettleAfter }
func (s *Sweeper) stuckAfter() time.Duration  { return s.cfg.StuckAfter }
func (s *Sweeper) margin() time.Duration      { return s.cfg.Margin }
func (s *Sweeper) pageSize() int              { return s.cfg.PageSize }
func (s *Sweeper) batchSize() int             { return s.cfg.BatchSize }
func (s *Sweeper) concurrency() int           { return s.cfg.Concurrency }

// newOwner is a lease owner token unique to one claim.
func newOwner() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "sweep-" + hex.EncodeToString(b[:])
}
