package jobs

import (
	"encoding/json"
	"time"
)

// Status is a job's state.
type Status string

// Job statuses.
const (
	StatusQueued    Status = "queued"
	StatusRunning   Status = "running"
	StatusWaiting   Status = "waiting"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
)

// Terminal reports whether a job in s is finished.
func (s Status) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// Job is a durable job.
type Job struct {
	ID             string          `json:"jobId"`
	Kind           string          `json:"kind"`
	TenantID       string          `json:"tenantId"`
	IdempotencyKey string          `json:"idempotencyKey"`
	Args           json.RawMessage `json:"args"`
	// ArgsHash fingerprints Args: the same key with other args is a
	// conflict.
	ArgsHash   string `json:"argsHash"`
	Status     Status `json:"status"`
	Generation int    `json:"generation"`
	Steps      int    `json:"steps"`
	// Attempts counts the tries of the current step: each claim counts
	// one (so a step that ends its worker before recording an outcome
	// uses one too), and a committed step starts the count again (a
	// snooze uses none).
	Attempts int `json:"attempts"`
	// Checkpoint is the handler's state after its last committed step
	// (inline), or CheckpointRef when it was too large to keep inline.
	Checkpoint    json.RawMessage `json:"checkpoint,omitempty"`
	CheckpointRef string          `json:"checkpointRef,omitempty"`
	LeaseOwner    string          `json:"leaseOwner,omitempty"`
	LeaseUntil    time.Time       `json:"leaseUntil,omitzero"`
	// DueAt is when the job next wants to run (queued, waiting) or its
	// lease expires (running); zero once finished.
	DueAt  time.Time       `json:"dueAt,omitzero"`
	Result json.RawMessage `json:"result,omitempty"`
	// Progress is what the last committed step reported (kinds that know
	// their total: a file import's bytes read of the file's size).
	Progress  *Progress `json:"progress,omitempty"`
	Error     *Error    `json:"error,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// FinishedAt is when the job reached a terminal state, ExpiresAt when
	// its record (and idempotency key) goes (FinishedAt + retention).
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	ExpiresAt  time.Time `json:"expiresAt,omitzero"`
	// IncidentID names the incident a failed job opened.
	IncidentID string `json:"incidentId,omitempty"`
	// Version increments on every write; every write is conditional on
	// the version read (optimistic concurrency, and the fencing token).
	Version int `json:"version"`
	// Revived is set (never stored) on the write that takes a finished
	// job back to work (restart): its idempotency key, set to expire with
	// the finished job, must stop expiring in the same write.
	Revived bool `json:"-"`
}

// Progress is how far a job is: Done of Total Units (Total 0: unknown),
// and the counts the kind keeps so far (records read, accepted, …).
type Progress struct {
	Done   int64            `json:"done"`
	Total  int64            `json:"total,omitempty"`
	Unit   string           `json:"unit,omitempty"`
	Counts map[string]int64 `json:"counts,omitempty"`
}

// Lease is the fencing token of a running step: a write conditional on the
// job still being at Version can only succeed while the step's claim
// stands (nothing else writes the job while it is leased; a takeover, a
// cancel or a restart changes the version).
type Lease struct {
	JobID   string
	Version int
}

// Lease returns the job's current fencing token.
func (j Job) Lease() Lease { return Lease{JobID: j.ID, Version: j.Version} }

// Error is why a job failed or was last retried.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Wake is the message that tells a worker to advance a job: ids and
// capabilities only, never job state (spec 003: reference durable state,
// never embed it).
type Wake struct {
	TenantID       string      `json:"tenantId"`
	IdempotencyKey string      `json:"idempotencyKey"`
	Payload        WakePayload `json:"payload"`
}

// WakePayload names the job and the generation the wake is for.
type WakePayload struct {
	Kind       string     `json:"kind"`
	JobID      string     `json:"jobId"`
	Generation int        `json:"generation"`
	NotBefore  *time.Time `json:"notBefore,omitempty"`
	// Ref is a best-effort wake's subject (no job item, no generation).
	Ref string `json:"ref,omitempty"`
}

// wakeOf is the wake of a job's current generation.
func wakeOf(j Job, notBefore time.Time) Wake {
	w := Wake{TenantID: j.TenantID, IdempotencyKey: j.IdempotencyKey, Payload: WakePayload{Kind: j.Kind, JobID: j.ID, Generation: j.Generation}}
	if !notBefore.IsZero() {
		nb := notBefore.UTC()
		w.Payload.NotBefore = &nb
	}
	return w
}
