package cachepurge

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Status is a job's lifecycle state (spec 001 §3).
type Status string

// Job statuses.
const (
	StatusQueued     Status = "queued"
	StatusProcessing Status = "processing"
	StatusCompleted  Status = "completed"
	StatusFailed     Status = "failed"
)

// Retention of the service's records.
const (
	// JobTTL keeps a job record a day after it was enqueued.
	JobTTL = 24 * time.Hour
	// CoalesceWindow is tier 1's logical window; CoalesceTTL the lock's
	// physical retention (the store's TTL deletes late, so readers check
	// the window themselves).
	CoalesceWindow = 5 * time.Second
	CoalesceTTL    = 60 * time.Second
	// TelemetryTTL keeps daily stats and dead-letter records a week.
	TelemetryTTL = 7 * 24 * time.Hour
)

// Error is a structured failure: a refused request, or why a job failed.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Status is the purge API's HTTP status when it answered.
	Status int `json:"status,omitempty"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func refuse(code, msg string) *Error { return &Error{Code: code, Message: msg} }

// Job is a purge job record (spec 001's PurgeJobRecord; field names are the
// spec's).
type Job struct {
	JobID       string     `json:"jobId"`
	TenantID    string     `json:"tenantId"`
	Tags        []string   `json:"tags"`
	Status      Status     `json:"status"`
	EnqueuedAt  time.Time  `json:"enqueuedAt"`
	StartedAt   *time.Time `json:"startedAt,omitempty"`
	CompletedAt *time.Time `json:"completedAt,omitempty"`
	FailedAt    *time.Time `json:"failedAt,omitempty"`
	Purged      *int       `json:"purged,omitempty"`
	RetryCount  *int       `json:"retryCount,omitempty"`
	Coalesced   bool       `json:"coalesced,omitempty"`
	Error       *Error     `json:"error,omitempty"`
	// EventID is the platform event that carries the job (not part of the
	// spec's record; shown so a job is traceable to its event).
	EventID string `json:"eventId,omitempty"`
}

// ExpiresAt is when the job's record expires.
func (j Job) ExpiresAt() time.Time { return j.EnqueuedAt.Add(JobTTL) }

// Result is PurgeTags' answer (spec 001's PurgeResult).
type Result struct {
	OK         bool       `json:"ok"`
	JobID      string     `json:"jobId,omitempty"`
	Status     Status     `json:"status,omitempty"`
	EnqueuedAt *time.Time `json:"enqueuedAt,omitempty"`
	Purged     *int       `json:"purged,omitempty"`
	Coalesced  bool       `json:"coalesced,omitempty"`
	Error      *Error     `json:"error,omitempty"`
}

// Refused is a Result for a refusal.
func Refused(e *Error) Result { return Result{OK: false, Error: e} }

// ValidJobID reports whether s is a job id this service issues:
// ^pj_[0-9a-f]{32}$, written out over bytes (a package-level regexp is
// compiled by every cold start that links this package; syntax_test.go
// holds it to the regexp).
func ValidJobID(s string) bool {
	if len(s) != 35 || s[:3] != "pj_" {
		return false
	}
	for i := 3; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9') && !('a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// NewJobID is a fresh random job id.
func NewJobID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails (Go 1.24+)
	return "pj_" + hex.EncodeToString(b[:])
}

// JobIDForEvent is the job id of a purge a content event asks for: the
// same for every delivery of the event, so a redelivery is one job.
func JobIDForEvent(tenant, eventID string) string {
	sum := sha256.Sum256([]byte(tenant + "/" + eventID))
	return "pj_" + hex.EncodeToString(sum[:16])
}
