package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/siteswarm/eventplatform/internal/kit/canonjson"
)

// StartParams start a job.
type StartParams struct {
	Kind     string
	TenantID string
	// IdempotencyKey makes Start safe to retry: the same tenant, kind and
	// key return the same job ("": the kind's KeyOf, else every Start is a
	// new job).
	IdempotencyKey string
	// Args is a JSON object (at most 32 KiB); nil is {}.
	Args json.RawMessage
}

// Metric names.
const (
	MetricStarted        = "JobsStarted"
	MetricCompleted      = "JobsCompleted"
	MetricFailed         = "JobsFailed"
	MetricSteps          = "JobStepsRun"
	MetricWakesLost      = "JobWakesNotSent"
	MetricBestEffortLost = "JobBestEffortLost"
	MetricWoken          = "JobsWokenBySweep"
	MetricOldestDue      = "JobsOldestDueAge"
)

// Start writes a job, then wakes it. The write is the commitment: if the
// wake cannot be sent (or there is no queue), the job is due and the sweep
// runs it. created is false when the key returned an existing job; a
// different args under the same key is a conflict; a Supersede kind
// restarts the existing job from scratch instead.
func (e *Engine) Start(ctx context.Context, p StartParams) (job Job, created bool, err error) {
	kind, ok := e.kinds[p.Kind]
	switch {
	case !ok:
		return Job{}, false, badRequest(CodeUnknownKind, "unknown job kind %q (known: %v)", p.Kind, e.Kinds())
	case kind.BestEffort:
		return Job{}, false, badRequest(CodeInvalidRequest, "kind %s is best-effort: publish it, it keeps no job", p.Kind)
	case !validTenant(p.TenantID):
		return Job{}, false, badRequest(CodeInvalidRequest, "tenantId must be 1 to 64 lowercase letters, digits, _ or -")
	case p.IdempotencyKey != "" && !validKey(p.IdempotencyKey):
		return Job{}, false, badRequest(CodeInvalidRequest, "idempotencyKey must be 1 to 200 of A-Z a-z 0-9 . _ : / @ + = -")
	case p.IdempotencyKey != "" && kind.Supersede && kind.KeyOf != nil:
		// The key derived from the args is what keeps one such job at a
		// time (one erasure per subject): a key of the caller's would
		// start a second one beside it.
		return Job{}, false, badRequest(CodeInvalidRequest, "kind %s is keyed by its args (a new start supersedes the running job with the same args' key): send no idempotencyKey", p.Kind)
	}
	args, err := e.checkArgs(kind, p.Args)
	if err != nil {
		return Job{}, false, err
	}
	if kind.CheckTenant != nil {
		if err := kind.CheckTenant(p.TenantID, args); err != nil {
			var re *RequestError
			if errors.As(err, &re) {
				return Job{}, false, err
			}
			return Job{}, false, badRequest(CodeInvalidArgs, "%v", err)
		}
	}
	hash, err := argsHash(args)
	if err != nil {
		return Job{}, false, badRequest(CodeInvalidArgs, "args: %v", err)
	}
	now := e.d.Now().UTC()
	j := Job{
		ID: newJobID(), Kind: p.Kind, TenantID: p.TenantID, IdempotencyKey: p.IdempotencyKey, Args: args, ArgsHash: hash,
		Status: StatusQueued, Generation: 1, DueAt: now, CreatedAt: now, UpdatedAt: now, Version: 1,
	}
	if j.IdempotencyKey == "" && kind.KeyOf != nil {
		j.IdempotencyKey = kind.KeyOf(args)
	}
	if j.IdempotencyKey == "" {
		j.IdempotencyKey = j.ID
	}
	for attempt := 0; ; attempt++ {
		err := e.d.Store.Create(ctx, j)
		if err == nil {
			e.count(MetricStarted, 1)
			e.d.Log.InfoContext(ctx, "jobs: started", "jobId", j.ID, "kind", j.Kind, "tenantId", j.TenantID)
			e.wake(ctx, j, 0)
			return j, true, nil
		}
		if !errors.Is(err, ErrExists) {
			return Job{}, false, err
		}
		existing, ok, gerr := e.d.Store.ByKey(ctx, p.TenantID, p.Kind, j.IdempotencyKey)
		if gerr != nil {
			return Job{}, false, gerr
		}
		if !ok {
			if attempt < 3 {
				continue // the key's job expired between the two reads
			}
			return Job{}, false, fmt.Errorf("jobs: idempotency key %s taken but its job is gone", j.IdempotencyKey)
		}
		if existing.ArgsHash != hash {
			return Job{}, false, badRequest(CodeIdempotencyConflict, "idempotency key %q already started job %s with other args", j.IdempotencyKey, existing.ID)
		}
		if kind.Supersede {
			// Even a completed job: the new start asks for the work again.
			restarted, err := e.transition(ctx, existing.ID, func(j *Job, now time.Time) error {
				restart(j, now, RestartParams{FromScratch: true, Note: "superseded by a new start"})
				return nil
			}, true)
			return restarted, false, err
		}
		return existing, false, nil
	}
}

// checkArgs requires a JSON object of at most 32 KiB that the kind accepts.
func (e *Engine) checkArgs(kind Kind, raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage(`{}`)
	}
	if len(raw) > maxArgsBytes {
		return nil, badRequest(CodeInvalidArgs, "args are larger than %d bytes: reference durable state, never embed it", maxArgsBytes)
	}
	if err := canonjson.Check(raw, 16); err != nil {
		return nil, badRequest(CodeInvalidArgs, "args: %v", err)
	}
	if raw[0] != '{' {
		return nil, badRequest(CodeInvalidArgs, "args must be a JSON object")
	}
	if kind.CheckArgs != nil {
		if err := kind.CheckArgs(raw); err != nil {
			var re *RequestError
			if errors.As(err, &re) {
				return nil, err
			}
			return nil, badRequest(CodeInvalidArgs, "%v", err)
		}
	}
	return raw, nil
}

// Publish sends a best-effort kind's wake for ref: no job item, lost if the
// send fails (counted), recomputed by whoever needs it.
func (e *Engine) Publish(ctx context.Context, kind, tenant, ref string) error {
	k, ok := e.kinds[kind]
	switch {
	case !ok || !k.BestEffort:
		return badRequest(CodeUnknownKind, "%q is not a best-effort kind", kind)
	case !validTenant(tenant) || ref == "" || !validKey(ref):
		return badRequest(CodeInvalidRequest, "a best-effort wake needs a tenant and a ref id")
	}
	if e.d.Waker == nil {
		e.count(MetricBestEffortLost, 1)
		return nil
	}
	w := Wake{TenantID: tenant, IdempotencyKey: ref, Payload: WakePayload{Kind: kind, Ref: ref}}
	if err := e.d.Waker.Wake(ctx, w, 0); err != nil {
		e.count(MetricBestEffortLost, 1)
		e.d.Log.WarnContext(ctx, "jobs: best-effort wake lost", "kind", kind, "ref", ref, "error", err)
	}
	return nil
}

// Get returns a job (a not_found RequestError for an unknown one).
func (e *Engine) Get(ctx context.Context, id string) (Job, error) {
	if !ValidJobID(id) {
		return Job{}, badRequest(CodeInvalidRequest, "%q is not a job id", id)
	}
	j, ok, err := e.d.Store.Get(ctx, id)
	if err != nil {
		return Job{}, err
	}
	if !ok {
		return Job{}, badRequest(CodeNotFound, "no job %s (finished jobs are kept %s)", id, e.cfg.Retention)
	}
	return j, nil
}

// MaxListLimit bounds a listing page.
const MaxListLimit = 100

// List pages jobs newest first: by tenant, by kind, or (neither given)
// across tenants and kinds.
func (e *Engine) List(ctx context.Context, p ListParams) (Page, error) {
	if p.Limit == 0 {
		p.Limit = 25
	}
	p.Kinds = nil
	if p.TenantID == "" && p.Kind == "" {
		// Across tenants and kinds: every kind's listing, merged.
		p.Kinds = e.Kinds()
		slices.Sort(p.Kinds)
	}
	switch {
	case p.TenantID != "" && !validTenant(p.TenantID):
		return Page{}, badRequest(CodeInvalidRequest, "invalid tenant id")
	case p.Kind != "" && e.kinds[p.Kind].Name == "":
		return Page{}, badRequest(CodeUnknownKind, "unknown kind %q", p.Kind)
	case p.Status != "" && !validStatus(p.Status):
		return Page{}, badRequest(CodeInvalidRequest, "unknown status %q", p.Status)
	case p.Limit < 1 || p.Limit > MaxListLimit:
		return Page{}, badRequest(CodeInvalidRequest, "limit must be 1..%d", MaxListLimit)
	}
	return e.d.Store.List(ctx, p)
}

func validStatus(s Status) bool {
	switch s {
	case StatusQueued, StatusRunning, StatusWaiting, StatusCompleted, StatusFailed, StatusCancelled:
		return true
	}
	return false
}

// RestartParams restart a job.
type RestartParams struct {
	// FromScratch drops the checkpoint (default: resume from it).
	FromScratch bool
	Note        string
}

// Restart runs a job again under a new generation (every in-flight wake of
// the old one becomes stale; a step still running can no longer commit):
// from its last checkpoint, or from scratch. A failed, cancelled or
// unfinished (stuck) job may be restarted; a completed one is refused
// (transition_not_allowed): its work is done, and re-running it (another
// export, another import of the same file) is a new start.
func (e *Engine) Restart(ctx context.Context, id string, p RestartParams) (Job, error) {
	return e.transition(ctx, id, func(j *Job, now time.Time) error {
		if j.Status == StatusCompleted {
			return badRequest(CodeTransitionNotAllowed, "job %s completed: a restart re-runs a failed, cancelled or unfinished job; start a new one to do the work again", j.ID)
		}
		restart(j, now, p)
		return nil
	}, true)
}

// restart takes j to a new generation, queued.
func restart(j *Job, now time.Time, p RestartParams) {
	j.Revived = j.Status.Terminal()
	j.Status, j.Generation, j.Attempts, j.Error, j.Result = StatusQueued, j.Generation+1, 0, nil, nil
	j.DueAt, j.FinishedAt, j.ExpiresAt, j.LeaseOwner, j.LeaseUntil = now, time.Time{}, time.Time{}, "", time.Time{}
	if p.FromScratch {
		j.Checkpoint, j.CheckpointRef, j.Steps, j.Progress = nil, "", 0, nil
	}
}

// Cancel stops a job: it is cancelled under a new generation, so no wake
// or running step of it changes anything any more.
func (e *Engine) Cancel(ctx context.Context, id string) (Job, error) {
	return e.transition(ctx, id, func(j *Job, now time.Time) error {
		if j.Status.Terminal() {
			return badRequest(CodeTransitionNotAllowed, "job %s is %s already", j.ID, j.Status)
		}
		j.Status, j.Generation, j.DueAt, j.FinishedAt, j.ExpiresAt = StatusCancelled, j.Generation+1, time.Time{}, now, now.Add(e.keep(e.kinds[j.Kind]))
		j.LeaseOwner, j.LeaseUntil = "", time.Time{}
		return nil
	}, false)
}

// transition applies change to the job with optimistic retries.
func (e *Engine) transition(ctx context.Context, id string, change func(j *Job, now time.Time) error, wake bool) (Job, error) {
	for attempt := 0; attempt < 5; attempt++ {
		j, err := e.Get(ctx, id)
		if err != nil {
			return Job{}, err
		}
		now := e.d.Now().UTC()
		if err := change(&j, now); err != nil {
			return Job{}, err
		}
		j.Version++
		j.UpdatedAt = now
		err = e.d.Store.Update(ctx, j)
		if errors.Is(err, ErrConflict) {
			continue
		}
		if err != nil {
			return Job{}, err
		}
		if wake {
			e.wake(ctx, j, 0)
		}
		return j, nil
	}
	return Job{}, fmt.Errorf("jobs: job %s kept changing; try again", id)
}

// wake sends the job's wake after delay; a failure only leaves the job to
// the sweep.
func (e *Engine) wake(ctx context.Context, j Job, delay time.Duration) {
	if e.d.Waker == nil || delay > MaxWakeDelay {
		return
	}
	var nb time.Time
	if delay > 0 {
		nb = e.d.Now().Add(delay)
	}
	if err := e.d.Waker.Wake(ctx, wakeOf(j, nb), delay); err != nil {
		e.count(MetricWakesLost, 1)
		e.d.Log.WarnContext(ctx, "jobs: wake not sent; the sweep will find the job", "jobId", j.ID, "error", err)
	}
}

// RestartJob restarts a failed job from its last checkpoint
// (replay.JobRestarter: replaying a failed job's incident). Only a failed
// job is restarted: replaying an incident never revives a job an operator
// cancelled, nor restarts one that is running or done.
func (e *Engine) RestartJob(ctx context.Context, id, note string) error {
	_, err := e.transition(ctx, id, func(j *Job, now time.Time) error {
		if j.Status != StatusFailed {
			return badRequest(CodeTransitionNotAllowed, "job %s is %s: replaying its incident restarts only a failed job", j.ID, j.Status)
		}
		restart(j, now, RestartParams{Note: note})
		return nil
	}, true)
	return err
}
