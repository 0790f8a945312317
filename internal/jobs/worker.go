package jobs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/kit/canonjson"
	"github.com/siteswarm/eventplatform/internal/kit/truncate"
)

// Incident fields of a job that failed for good: its incident is the job
// id on the topic "jobs.<kind>", so operators see every problem in one
// queue and replaying the incident restarts the job.
const (
	IncidentSource      = "jobs"
	IncidentTopicPrefix = "jobs."
)

// IncidentTopic is the incident topic of a kind's failed jobs.
func IncidentTopic(kind string) string { return IncidentTopicPrefix + kind }

// poison is a wake no retry can fix.
type poison struct{ reason string }

func (p *poison) Error() string { return p.reason }

// ParseWake reads a wake strictly: one JSON object, no unknown or
// duplicate members, a registered kind and well-formed ids.
func (e *Engine) ParseWake(body []byte) (Wake, error) {
	var w Wake
	if err := canonjson.Check(body, 8); err != nil {
		return w, &poison{"wake is not JSON: " + err.Error()}
	}
	if err := strictJSON(body, &w); err != nil {
		return w, &poison{"wake does not fit the wake shape: " + err.Error()}
	}
	k, ok := e.kinds[w.Payload.Kind]
	switch {
	case !ok:
		return w, &poison{fmt.Sprintf("unknown job kind %q", w.Payload.Kind)}
	case !validTenant(w.TenantID) || !validKey(w.IdempotencyKey):
		return w, &poison{"wake without a valid tenant and idempotency key"}
	case k.BestEffort && (w.Payload.Ref == "" || w.Payload.JobID != ""):
		return w, &poison{"a best-effort wake names a ref and no job"}
	case !k.BestEffort && (!ValidJobID(w.Payload.JobID) || w.Payload.Generation < 1):
		return w, &poison{"wake without a valid job id and generation"}
	}
	return w, nil
}

// HandleSQS is the worker Lambda's handler: each wake of the batch in
// parallel, partial batch failures for the ones to retry. A malformed wake
// is logged and acknowledged (its redrive would only repeat the refusal).
func (e *Engine) HandleSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, rec := range ev.Records {
		wg.Go(func() {
			log := e.d.Log.With("messageId", rec.MessageId)
			w, err := e.ParseWake([]byte(rec.Body))
			if err == nil {
				log = log.With("jobId", w.Payload.JobID, "kind", w.Payload.Kind, "tenantId", w.TenantID)
				err = e.RunWake(ctx, w)
			}
			var p *poison
			switch {
			case errors.As(err, &p):
				log.ErrorContext(ctx, "jobs: poison wake dropped", "reason", p.reason)
			case err != nil:
				log.WarnContext(ctx, "jobs: wake will be retried", "error", err)
				mu.Lock()
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return resp, nil
}

// RunWake advances the wake's job by one step, if the wake still applies:
// a wake of another generation, for a finished job, for a job another
// worker holds or for one not due yet is a no-op. An error asks for the
// wake to be retried (the job could not be read or claimed).
func (e *Engine) RunWake(ctx context.Context, w Wake) error {
	kind := e.kinds[w.Payload.Kind]
	if kind.Handler == nil {
		return fmt.Errorf("%w: %s", ErrNoHandler, kind.Name)
	}
	if kind.BestEffort {
		return e.runBestEffort(ctx, kind, w)
	}
	log := e.d.Log.With("jobId", w.Payload.JobID, "kind", kind.Name, "tenantId", w.TenantID)
	j, ok, err := e.d.Store.Get(ctx, w.Payload.JobID)
	if err != nil {
		return err
	}
	now := e.d.Now().UTC()
	switch {
	case !ok:
		log.InfoContext(ctx, "jobs: wake for a job that no longer exists")
		return nil
	case j.Kind != w.Payload.Kind || j.TenantID != w.TenantID:
		return &poison{"the wake's kind or tenant is not its job's"}
	case j.Generation != w.Payload.Generation:
		log.InfoContext(ctx, "jobs: stale wake (another generation)", "wakeGeneration", w.Payload.Generation, "generation", j.Generation)
		return nil
	case j.Status == StatusFailed && !j.DueAt.IsZero():
		return e.confirmIncident(ctx, log, j) // its worker could not open the incident
	case j.Status.Terminal():
		return nil
	case j.Status == StatusRunning && j.LeaseUntil.After(now):
		return nil // another worker holds the step; its commit wakes the next
	case j.Status != StatusRunning && j.DueAt.After(now.Add(time.Second)):
		return nil // early: its delayed wake or the sweep comes back for it
	}
	if j.Attempts >= kind.MaxAttempts {
		// Every attempt was claimed and none recorded an outcome: the step
		// kills its worker (out of memory, past the Lambda timeout). Claims
		// count attempts, so such a step is tried MaxAttempts times, then
		// fails for good with its incident instead of being reclaimed
		// forever.
		next := j
		next.LeaseOwner, next.LeaseUntil, next.UpdatedAt, next.Version = "", time.Time{}, now, j.Version+1
		return e.commitFailure(ctx, log, kind, j, next, now, &StepError{Permanent: true, Code: CodeAttemptsExhausted,
			Err: fmt.Errorf("%d attempts at step %d never finished: each ended its worker (out of memory or time?) before recording an outcome", j.Attempts, j.Steps)})
	}
	seen := j.Version
	claimed := j
	// The claim counts the attempt: a step that never gets to record its
	// outcome still uses one.
	claimed.Attempts = j.Attempts + 1
	claimed.Status, claimed.LeaseOwner = StatusRunning, randomHex(8)
	claimed.LeaseUntil = now.Add(kind.StepTimeout + e.cfg.LeaseMargin)
	claimed.DueAt, claimed.UpdatedAt, claimed.Version = claimed.LeaseUntil, now, seen+1
	if err := e.d.Store.Update(ctx, claimed); errors.Is(err, ErrConflict) {
		return nil // a concurrent wake or sweep claimed it first
	} else if err != nil {
		return err
	}
	return e.runStep(ctx, log, kind, claimed)
}

// runStep runs one step of a claimed job and commits its outcome,
// conditional on the claim still standing.
func (e *Engine) runStep(ctx context.Context, log *slog.Logger, kind Kind, j Job) error {
	cp, err := e.loadCheckpoint(ctx, j)
	if err != nil {
		return err // the claim expires; a later wake retries
	}
	deadline := j.LeaseUntil.Add(-e.cfg.LeaseMargin)
	if d, ok := ctx.Deadline(); ok && d.Add(-5*time.Second).Before(deadline) {
		deadline = d.Add(-5 * time.Second)
	}
	sctx, cancel := context.WithDeadline(ctx, deadline)
	step := Step{
		Job: j, Checkpoint: cp, Lease: j.Lease(), Attempt: j.Attempts, Ref: "",
		Scope: fmt.Sprintf("%s%s/g%d/s%d/v%d/", ObjectPrefix, j.ID, j.Generation, j.Steps, j.Version),
	}
	start := e.d.Now()
	out, stepErr := safeStep(sctx, kind.Handler, step)
	if stepErr == nil && out.kind == 0 {
		stepErr = errors.New("the handler returned no outcome")
	}
	if stepErr != nil && sctx.Err() != nil && ctx.Err() == nil {
		stepErr = &StepError{Code: CodeStepTimeout, Err: fmt.Errorf("the step ran out of its %s: %w", kind.StepTimeout, stepErr)}
	}
	cancel()
	e.count(MetricSteps, 1)

	now := e.d.Now().UTC()
	next := j
	next.LeaseOwner, next.LeaseUntil, next.UpdatedAt, next.Version = "", time.Time{}, now, j.Version+1
	var delay time.Duration
	wake := false
	if stepErr == nil && out.progress != nil {
		next.Progress = out.progress
	}
	switch {
	case stepErr == nil && out.kind == outcomeDone:
		res, err := json.Marshal(out.result)
		if err != nil {
			return e.commitFailure(ctx, log, kind, j, next, now, &StepError{Permanent: true, Code: CodeHandlerFailed, Err: fmt.Errorf("result: %w", err)})
		}
		next.Status, next.Result, next.Steps, next.Attempts, next.Error = StatusCompleted, res, j.Steps+1, 0, nil
		next.DueAt, next.FinishedAt, next.ExpiresAt = time.Time{}, now, now.Add(e.keep(kind))
	case stepErr == nil:
		if err := e.setCheckpoint(ctx, &next, out.checkpoint); err != nil {
			return e.commitFailure(ctx, log, kind, j, next, now, &StepError{Err: fmt.Errorf("checkpoint: %w", err)})
		}
		next.Steps, next.Attempts, next.Error = j.Steps+1, 0, nil
		next.Status, next.DueAt = StatusQueued, now
		if out.kind == outcomeSnooze && out.after > 0 {
			next.Status, next.DueAt, delay = StatusWaiting, now.Add(out.after), out.after
		}
		wake = true
	default:
		return e.commitFailure(ctx, log, kind, j, next, now, stepErr)
	}
	if err := e.d.Store.Update(ctx, next); errors.Is(err, ErrConflict) {
		log.WarnContext(ctx, "jobs: lease lost during the step; its outcome is discarded", "took", e.d.Now().Sub(start).String())
		return nil
	} else if err != nil {
		return err
	}
	if next.Status == StatusCompleted {
		e.count(MetricCompleted, 1)
		log.InfoContext(ctx, "jobs: completed", "steps", next.Steps)
		e.resolveIncident(ctx, log, next)
	}
	if wake {
		e.wake(ctx, next, delay)
	}
	return nil
}

// commitFailure records a failed step: a retry with backoff, or the job
// failed for good (permanent, or attempts exhausted) with its incident.
func (e *Engine) commitFailure(ctx context.Context, log *slog.Logger, kind Kind, j, next Job, now time.Time, stepErr error) error {
	var se *StepError
	if !errors.As(stepErr, &se) {
		se = &StepError{Err: stepErr}
	}
	msg := truncate.String(se.Err.Error(), incident.MaxErrorMessageLen)
	attempts := j.Attempts // counted by the claim
	next.Attempts = attempts
	if !se.Permanent && attempts < kind.MaxAttempts {
		d := se.RetryAfter
		if d <= 0 {
			d = e.backoff(attempts)
		}
		code := se.Code
		if code == "" {
			code = "retrying"
		}
		next.Status, next.DueAt, next.Error = StatusWaiting, now.Add(d), &Error{Code: code, Message: msg}
		if err := e.d.Store.Update(ctx, next); errors.Is(err, ErrConflict) {
			return nil
		} else if err != nil {
			return err
		}
		log.WarnContext(ctx, "jobs: step failed; retrying", "attempt", attempts, "delay", d.String(), "error", msg)
		e.wake(ctx, next, d)
		return nil
	}
	code := se.Code
	if !se.Permanent {
		code = CodeAttemptsExhausted
		msg = fmt.Sprintf("%d attempts failed; last: %s", attempts, msg)
	}
	next.Status, next.FinishedAt, next.Error = StatusFailed, now, &Error{Code: code, Message: msg}
	next.ExpiresAt = now.Add(e.keep(kind))
	// The fenced write first, the incident after it: a step whose claim
	// no longer stands (the job was cancelled or restarted meanwhile, or
	// its lease was taken over) must open nothing, or replaying that
	// incident would revive a job an operator stopped. The failed job
	// names its incident before it exists and stays due (DueAt) until the
	// incident is confirmed, so if this worker cannot open it the wake's
	// retry or the sweep does (confirmIncident): a failed job is never
	// left without its incident.
	next.IncidentID = incidentOf(next).IncidentID()
	next.DueAt = now.Add(e.cfg.LeaseMargin)
	if err := e.d.Store.Update(ctx, next); errors.Is(err, ErrConflict) {
		log.WarnContext(ctx, "jobs: lease lost during a failing step; its failure is discarded", "code", code, "error", msg)
		return nil
	} else if err != nil {
		return err
	}
	e.count(MetricFailed, 1)
	log.ErrorContext(ctx, "jobs: failed", "code", code, "error", msg, "incidentId", next.IncidentID)
	return e.confirmIncident(ctx, log, next)
}

// confirmIncident opens the incident of a job that failed (its fenced
// write done, DueAt still set), then takes the job out of the due index,
// conditional on it being as written. An error leaves the job due: the
// wake's retry or the next sweep tries again (opening is idempotent: one
// dead letter per job, generation and step).
func (e *Engine) confirmIncident(ctx context.Context, log *slog.Logger, j Job) error {
	if _, err := e.openIncident(ctx, j, e.d.Now().UTC()); err != nil {
		return fmt.Errorf("jobs: open the incident of failed job %s: %w", j.ID, err)
	}
	done := j
	done.DueAt, done.Version = time.Time{}, j.Version+1
	if err := e.d.Store.Update(ctx, done); err != nil && !errors.Is(err, ErrConflict) {
		return err // the incident is open; only the due entry is left, and it is harmless
	}
	return nil
}

// incidentOf is the dead letter of a failed job: one per job, generation
// and step (its message id), so recording it again changes nothing.
func incidentOf(j Job) incident.DeadLetter {
	dl := incident.DeadLetter{
		EventKey: j.ID, EventID: j.ID, TenantID: j.TenantID, Topic: IncidentTopic(j.Kind), Type: "job." + j.Kind,
		Source: IncidentSource, SourceQueue: IncidentSource, MessageID: fmt.Sprintf("%s:g%d:s%d", j.ID, j.Generation, j.Steps),
		FailedAt: j.FinishedAt, By: IncidentSource,
	}
	if j.Error != nil {
		dl.ErrorCode, dl.ErrorMessage = j.Error.Code, j.Error.Message
	}
	return dl
}

// openIncident records a failed job in the incident store.
func (e *Engine) openIncident(ctx context.Context, j Job, now time.Time) (string, error) {
	snapshot := j
	snapshot.Checkpoint, snapshot.Args = nil, nil // the incident names the job; it does not copy it
	snapshot.DueAt = time.Time{}
	body, err := json.Marshal(snapshot)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(body)
	dl := incidentOf(j)
	dl.Body = incident.Body{Inline: body, Size: len(body), SHA256: hex.EncodeToString(sum[:])}
	// A job's dead letter names the job, not an event: nothing of an
	// event's data to guard.
	inc, _, err := incident.Upsert(ctx, incident.Unguarded{Store: e.d.Incidents}, dl, now)
	return inc.ID, err
}

// resolveIncident resolves the incident of a job that failed before and
// completed after a replay restarted it.
func (e *Engine) resolveIncident(ctx context.Context, log *slog.Logger, j Job) {
	if j.IncidentID == "" {
		return
	}
	r, ok := e.d.Incidents.(interface {
		ResolveReplay(ctx context.Context, id string, at time.Time) error
	})
	if !ok {
		return
	}
	if err := r.ResolveReplay(ctx, j.IncidentID, e.d.Now()); err != nil {
		log.WarnContext(ctx, "jobs: could not resolve the job's incident", "incidentId", j.IncidentID, "error", err)
	}
}

func (e *Engine) backoff(attempts int) time.Duration {
	d := e.cfg.BackoffBase
	for i := 1; i < attempts && d < e.cfg.BackoffCap; i++ {
		d *= 2
	}
	return min(d, e.cfg.BackoffCap)
}

// safeStep runs a step, turning a panic into a failure.
func safeStep(ctx context.Context, h Handler, s Step) (out Outcome, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &StepError{Code: CodeHandlerFailed, Err: fmt.Errorf("the step panicked: %v", r)}
		}
	}()
	return h.Step(ctx, s)
}

// runBestEffort runs a best-effort wake's handler once; an error retries
// the message (SQS redelivery), nothing is recorded.
func (e *Engine) runBestEffort(ctx context.Context, kind Kind, w Wake) error {
	sctx, cancel := context.WithTimeout(ctx, kind.StepTimeout)
	defer cancel()
	_, err := safeStep(sctx, kind.Handler, Step{
		Job: Job{Kind: kind.Name, TenantID: w.TenantID, IdempotencyKey: w.IdempotencyKey}, Attempt: 1, Ref: w.Payload.Ref,
	})
	e.count(MetricSteps, 1)
	var se *StepError
	if errors.As(err, &se) && se.Permanent {
		return &poison{se.Err.Error()}
	}
	return err
}

// checkpoint storage

func (e *Engine) setCheckpoint(ctx context.Context, j *Job, v any) error {
	if v == nil {
		return nil // keep the previous one
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) <= e.cfg.CheckpointInlineBytes {
		j.Checkpoint, j.CheckpointRef = b, ""
		return nil
	}
	key := fmt.Sprintf("%s%s/checkpoints/g%d-v%d.json", ObjectPrefix, j.ID, j.Generation, j.Version)
	if err := e.d.Blobs.Put(ctx, e.cfg.Bucket, key, b); err != nil {
		return err
	}
	j.Checkpoint, j.CheckpointRef = nil, key
	return nil
}

func (e *Engine) loadCheckpoint(ctx context.Context, j Job) (json.RawMessage, error) {
	if j.CheckpointRef == "" {
		return j.Checkpoint, nil
	}
	b, err := e.d.Blobs.Get(ctx, e.cfg.Bucket, j.CheckpointRef)
	if err != nil {
		return nil, fmt.Errorf("jobs: checkpoint of %s: %w", j.ID, err)
	}
	return b, nil
}
