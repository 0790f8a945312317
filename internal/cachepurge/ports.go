package cachepurge

import (
	"context"
	"errors"
	"time"

	"github.com/siteswarm/eventplatform/internal/envelope"
)

// Jobs is the job store as ingress and the consumer use it.
type Jobs interface {
	// Lock reads tier 1's coalesce lock of (tenant, tags hash); false when
	// there is none (an expired one may still be returned: check Until).
	Lock(ctx context.Context, tenant, hash string) (Lock, bool, error)
	// Create writes a new queued job and its coalesce lock together,
	// conditional on the lock being as seen (p.Seen "" for none):
	// ErrLockTaken when another request took it meanwhile.
	Create(ctx context.Context, p CreateParams) error
	// ReleaseLock ends the lock of a job that could not be queued, so no
	// later request coalesces into it; a lock that moved on is left alone.
	ReleaseLock(ctx context.Context, l Lock) error
	// Job reads a job (strongly consistent); false when there is none.
	Job(ctx context.Context, id string) (Job, bool, error)
	// Ensure creates j unless a job with its id exists, and returns the
	// stored one (created reports which).
	Ensure(ctx context.Context, j Job) (stored Job, created bool, err error)
	// Save writes j over the stored job.
	Save(ctx context.Context, j Job) error
}

// Lock is a tier 1 coalesce lock: requests for the same tags of the same
// tenant until Until share JobID.
type Lock struct {
	TenantID, Hash, JobID string
	Until                 time.Time
}

// CreateParams create a job with its lock.
type CreateParams struct {
	Job  Job
	Lock Lock
	// Seen is the job id of the (expired or stale) lock read before, "" if
	// there was none.
	Seen string
}

// ErrLockTaken: another request created the lock first.
var ErrLockTaken = errors.New("purge: coalesce lock taken")

// Telemetry records what the consumer did: daily counters per tenant and
// the dead-letter mirror.
type Telemetry interface {
	// Count adds c to its day's counters (atomic increments).
	Count(ctx context.Context, c Counts) error
	// DeadLetter records a job that failed for good, indexed by time.
	DeadLetter(ctx context.Context, d DeadLetter) error
}

// Counts are increments of a tenant's daily counters.
type Counts struct {
	Day        string // YYYY-MM-DD (UTC)
	TenantID   string
	Purges     int
	Tags       int
	Retries429 int
	Failures   int
}

// Daily is one tenant's counters of a day (spec 001 §9.3).
type Daily struct {
	Day        string `json:"date"`
	TenantID   string `json:"tenantId"`
	Purges     int    `json:"purges"`
	Tags       int    `json:"tags"`
	Retries429 int    `json:"retries429"`
	Failures   int    `json:"failures"`
}

// DeadLetter is the diagnostic envelope of a failed job (spec 001 §6.2).
type DeadLetter struct {
	JobID      string    `json:"jobId"`
	TenantID   string    `json:"tenantId"`
	Tags       []string  `json:"tags"`
	EnqueuedAt time.Time `json:"enqueuedAt"`
	FailedAt   time.Time `json:"failedAt"`
	Attempts   int       `json:"attempts"`
	Error      *Error    `json:"error"`
}

// Reports are the operator views over the store.
type Reports interface {
	// Daily returns every tenant's counters of a day.
	Daily(ctx context.Context, day string) ([]Daily, error)
	// RecentDeadLetters returns up to limit dead letters, newest first.
	RecentDeadLetters(ctx context.Context, limit int) ([]DeadLetter, error)
}

// Publisher puts an envelope into the platform (ingest, invoked by ARN or
// in-process).
type Publisher interface {
	Publish(ctx context.Context, raw []byte) (envelope.Result, error)
}

// API is the CDN's purge API.
type API interface {
	// Purge purges tags from zone's cache (at most MaxTagsPerAPICall). A
	// refusal or failure is an *APIError; anything else (a network error,
	// a timeout) is retried.
	Purge(ctx context.Context, c Call) (Response, error)
}

// Call is one purge API request.
type Call struct {
	TenantID string
	Zone     string
	Tags     []string
	// JobIDs are the jobs the call serves (recorded by local mode).
	JobIDs []string
}

// Response is a successful call's rate-limit state.
type Response struct {
	RateLimit RateLimit
}

// RateLimit is what the API said about its rate limit (IETF RateLimit
// headers); zero values mean it did not say.
type RateLimit struct {
	// Remaining requests in the current window, and when it resets.
	Remaining int
	Reset     time.Duration
	Known     bool
	// Quota requests per Window (the policy).
	Quota  int
	Window time.Duration
}

// APIError is the purge API's answer to a call it did not carry out.
type APIError struct {
	Status int
	// Codes are the API's error codes (Cloudflare errors[].code), Message
	// their messages.
	Codes   []int
	Message string
	// RetryAfter is the API's Retry-After (0 when it gave none).
	RetryAfter time.Duration
	// RateLimit as on a success.
	RateLimit RateLimit
}

func (e *APIError) Error() string {
	if e.Message == "" {
		return "purge API answered " + itoa(e.Status)
	}
	return "purge API answered " + itoa(e.Status) + ": " + e.Message
}
