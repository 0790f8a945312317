package lambdainvoke

import (
	"fmt"
	"strings"
)

// Kind classifies a failed ingest call by what the caller should do.
type Kind string

const (
	// KindTimeout: the call outlived its deadline, or ingest ran out of
	// time (Sandbox.Timedout). Retry later; ingest is idempotent.
	KindTimeout Kind = "timeout"
	// KindThrottled: Lambda throttled the invoke (concurrency limits).
	KindThrottled Kind = "throttled"
	// KindUnavailable: a Lambda service error, a deploy in progress, or no
	// answer at all.
	KindUnavailable Kind = "unavailable"
	// KindFunction: ingest returned a function error (an infrastructure
	// failure before its commit, or a crash).
	KindFunction Kind = "function_error"
	// KindInvoke: the invoke was refused (function not found, access
	// denied, payload too large): a misconfiguration.
	KindInvoke Kind = "invoke_failed"
	// KindBadResult: ingest answered something that is not a result.
	KindBadResult Kind = "bad_result"
)

// Error is a failed ingest call.
type Error struct {
	Function string
	Kind     Kind
	// Type is the function's errorType or the service's error code.
	Type    string
	Message string
	Err     error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invoke %s: %s", e.Function, e.Kind)
	if e.Type != "" {
		b.WriteString(": " + e.Type)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Unavailable reports whether ingest is busy or slow rather than broken:
// the webhook answers 503 (retry later) instead of 502.
func (e *Error) Unavailable() bool {
	switch e.Kind {
	case KindTimeout, KindThrottled, KindUnavailable:
		return true
	}
	return false
}
