package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Handler runs one bounded step of a kind's job.
type Handler interface {
	Step(ctx context.Context, s Step) (Outcome, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, s Step) (Outcome, error)

// Step calls f.
func (f HandlerFunc) Step(ctx context.Context, s Step) (Outcome, error) { return f(ctx, s) }

// Kind is a registered job kind: its description (name, argument and
// tenant checks, idempotency key, attempts, step timeout, how long a
// finished job is kept), which is all that starting, listing, cancelling,
// restarting and scheduling a job needs, and its Handler, which runs its
// steps. An engine that only does the former registers the description
// alone (Handler nil): a wake of such a kind is left for an engine that
// has its handler (jobs-worker).
type Kind struct {
	Name string
	// Handler runs the kind's steps (nil: not in this engine).
	Handler Handler
	// CheckArgs validates a Start's args (a *RequestError, or nil).
	CheckArgs func(args json.RawMessage) error
	// CheckTenant, when set, validates the Start's tenant against its
	// (checked) args (a *RequestError, or nil): a file import may only
	// write the tenant its file's path names.
	CheckTenant func(tenant string, args json.RawMessage) error
	// Supersede: a Start with an existing key restarts the job from scratch
	// under a new generation instead of returning it (a new erasure of a
	// subject supersedes the old one).
	Supersede bool
	// KeyOf derives the idempotency key of a Start that gives none from
	// its (checked) args: an erasure is keyed by its subject, so a new one
	// supersedes the old. Nil: such a Start gets a key of its own. A
	// Supersede kind with KeyOf refuses a Start that names a key: its
	// jobs are one per derived key.
	KeyOf func(args json.RawMessage) string
	// BestEffort kinds keep no job item: a wake carries the work's id (Ref)
	// and is lost if its send fails (recomputable work only).
	BestEffort bool
	// MaxAttempts of one step before the job fails (default 5).
	MaxAttempts int
	// StepTimeout bounds one step (default 30 s; it must fit the worker's
	// Lambda timeout with the commit).
	StepTimeout time.Duration
	// KeepFor keeps a finished job of this kind (and its key) this long
	// instead of the engine's Retention: an export's job is how the
	// retention expiry finds its objects, so it lives as long as they may.
	KeepFor time.Duration
	// DailyTenants, when set, lists the tenants a daily schedule of this
	// kind starts a job for (a ScheduledCall without a tenant): the
	// retention expiry runs for every tenant with a policy.
	DailyTenants func(ctx context.Context) ([]string, error)
}

// With is the kind with its handler.
func (k Kind) With(h Handler) Kind {
	k.Handler = h
	return k
}

// ErrNoHandler is a wake of a kind whose handler is not registered in this
// engine (a described kind): it is retried, so the engine that runs the
// kind's steps gets it.
var ErrNoHandler = errors.New("jobs: this engine does not run the kind's steps")

// Step is what a handler gets for one step.
type Step struct {
	// Job is the job as claimed (args, tenant, generation, steps so far).
	Job Job
	// Checkpoint is the state the last committed step left (nil at first).
	Checkpoint json.RawMessage
	// Lease is the fencing token every write of the step must carry.
	Lease Lease
	// Attempt is this try of the step (1 on the first).
	Attempt int
	// Scope is a key prefix unique to this attempt of this step: objects
	// the step writes go under it and only become part of the job through
	// the checkpoint the step commits.
	Scope string
	// Ref is a best-effort wake's subject (best-effort kinds only).
	Ref string
}

// Args decodes the job's args strictly into v.
func (s Step) Args(v any) error { return strictJSON(s.Job.Args, v) }

// Resume decodes the checkpoint into v (left alone when there is none).
func (s Step) Resume(v any) error {
	if len(s.Checkpoint) == 0 || string(s.Checkpoint) == "null" {
		return nil
	}
	return json.Unmarshal(s.Checkpoint, v)
}

type outcomeKind int

const (
	outcomeContinue outcomeKind = iota + 1
	outcomeDone
	outcomeSnooze
)

// Outcome is what a successful step asks for next.
type Outcome struct {
	kind       outcomeKind
	checkpoint any
	result     any
	after      time.Duration
	progress   *Progress
}

// WithProgress records how far the job is (shown by `evp jobs view
// --wait` and the job view); it is committed with the step.
func (o Outcome) WithProgress(p Progress) Outcome {
	o.progress = &p
	return o
}

// Continue commits checkpoint and runs the next step at once.
func Continue(checkpoint any) Outcome { return Outcome{kind: outcomeContinue, checkpoint: checkpoint} }

// Done finishes the job with result.
func Done(result any) Outcome { return Outcome{kind: outcomeDone, result: result} }

// Snooze commits checkpoint and runs the next step after d (no attempt is
// used: waiting is not failing).
func Snooze(d time.Duration, checkpoint any) Outcome {
	return Outcome{kind: outcomeSnooze, checkpoint: checkpoint, after: d}
}

// StepError carries a failed step's retry intent.
type StepError struct {
	Permanent  bool
	Code       string
	RetryAfter time.Duration
	Err        error
}

func (e *StepError) Error() string { return e.Err.Error() }
func (e *StepError) Unwrap() error { return e.Err }

// Retry marks err transient: the step is tried again with backoff until
// the kind's attempts run out. A plain error means the same.
func Retry(err error) error { return &StepError{Err: err} }

// RetryAfter marks err transient and asks for the next try after d.
func RetryAfter(err error, d time.Duration) error { return &StepError{Err: err, RetryAfter: d} }

// Fail marks err permanent: the job fails at once with code.
func Fail(code string, err error) error {
	if code == "" {
		code = CodeHandlerFailed
	}
	return &StepError{Permanent: true, Code: code, Err: err}
}

// Failure codes the engine records.
const (
	CodeHandlerFailed     = "handler_failed"
	CodeAttemptsExhausted = "attempts_exhausted"
	CodeStepTimeout       = "step_timeout"
)

// RequestError is a refused request (Start, Cancel, Restart, a view): a
// machine-readable code and a message.
type RequestError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *RequestError) Error() string { return e.Code + ": " + e.Message }

// Codes of refused requests.
const (
	CodeInvalidRequest       = "invalid_request"
	CodeUnknownKind          = "unknown_kind"
	CodeInvalidArgs          = "invalid_args"
	CodeIdempotencyConflict  = "idempotency_conflict"
	CodeNotFound             = "not_found"
	CodeTransitionNotAllowed = "transition_not_allowed"
)

func badRequest(code, format string, args ...any) error {
	return &RequestError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// IsRequestError reports whether err is a refusal (not an infrastructure
// failure).
func IsRequestError(err error) bool {
	var re *RequestError
	return errors.As(err, &re)
}
