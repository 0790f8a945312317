package cachepurge

import (
	"errors"
	"net/http"
	"strconv"
	"time"
)

// Retry policy (spec 001 §6).
const (
	// MaxAttempts is how many times a job is tried before it fails for good
	// (MAX_RETRIES).
	MaxAttempts = 3
	// BaseDelay doubles per attempt: 2 s, 4 s, 8 s.
	BaseDelay = 2 * time.Second
	// MaxDelay caps every delay, the API's Retry-After included.
	MaxDelay = 300 * time.Second
)

// Failure codes of a job (Job.Error.Code).
const (
	CodeMaxRetriesExceeded = "max_retries_exceeded"
	CodeUnknownZone        = "unknown_zone"
	CodeUnauthorized       = "unauthorized"
	CodeRejected           = "purge_rejected"
	// Transient causes, recorded while a job is retried.
	CodeRateLimited    = "rate_limited"
	CodeAPIUnavailable = "api_unavailable"
)

// Delay is how long a job waits after its attempt-th failed attempt:
// min(MaxDelay, BaseDelay·2^(attempt-1)), or the API's Retry-After when it
// gave one, capped at MaxDelay.
func Delay(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, MaxDelay)
	}
	d := BaseDelay
	for i := 1; i < attempt && d < MaxDelay; i++ {
		d *= 2
	}
	return min(d, MaxDelay)
}

// outcome is what a failed call means for its jobs.
type outcome struct {
	retryable  bool
	err        *Error
	retryAfter time.Duration
	rateLimit  RateLimit
	limited    bool // a 429
}

// classify reads a failed API call: 429, 408, 5xx and network errors are
// retried; 401/403 (credentials), 404 (unknown zone) and every other
// refusal, including a 200 whose body says success:false, are not.
func classify(err error) outcome {
	var ae *APIError
	if !errors.As(err, &ae) {
		return outcome{retryable: true, err: &Error{Code: CodeAPIUnavailable, Message: err.Error()}}
	}
	o := outcome{err: &Error{Message: ae.Error(), Status: ae.Status}, retryAfter: ae.RetryAfter, rateLimit: ae.RateLimit}
	switch s := ae.Status; {
	case s == http.StatusTooManyRequests:
		o.retryable, o.limited, o.err.Code = true, true, CodeRateLimited
	case s == http.StatusRequestTimeout || s >= 500:
		o.retryable, o.err.Code = true, CodeAPIUnavailable
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		o.err.Code = CodeUnauthorized
	case s == http.StatusNotFound:
		o.err.Code = CodeUnknownZone
	default:
		o.err.Code = CodeRejected
	}
	return o
}

func itoa(n int) string { return strconv.Itoa(n) }
