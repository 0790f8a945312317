package webhook

import (
	"fmt"
	"net/http"

	"github.com/siteswarm/eventplatform/internal/envelope"
)

// Codes of the adapter's own refusals (ingest rejections keep ingest's
// codes). They appear as error.code in response bodies and in logs; never
// rename one.
const (
	// CodeMethodNotAllowed: the request was not a POST.
	CodeMethodNotAllowed envelope.Code = "method_not_allowed"
	// CodeBodyTooLarge: the body exceeds MaxBodyBytes.
	CodeBodyTooLarge envelope.Code = envelope.CodePayloadTooLarge
	// CodeInvalidBody: the body could not be decoded (bad base64).
	CodeInvalidBody envelope.Code = "invalid_body"
	// CodeSignatureMissing: no signature header.
	CodeSignatureMissing envelope.Code = "signature_missing"
	// CodeSignatureMalformed: the signature header cannot be parsed.
	CodeSignatureMalformed envelope.Code = "signature_malformed"
	// CodeSignatureExpired: the signed timestamp is outside the tolerance
	// window, in the past or in the future (replay protection).
	CodeSignatureExpired envelope.Code = "signature_expired"
	// CodeSignatureMismatch: no signature matches any active secret.
	CodeSignatureMismatch envelope.Code = "signature_mismatch"
	// CodeInvalidEvent: the verified body is not an event of the provider.
	CodeInvalidEvent envelope.Code = "invalid_event"
	// CodeTenantUnresolved: the event maps to no tenant. Answered with 422
	// so the provider keeps retrying while an operator fixes the mapping.
	CodeTenantUnresolved envelope.Code = "tenant_unresolved"
	// CodeUnknownAccount: a Connect event from an account the tenant map
	// does not name (422, retried by the provider; counted and alarmed).
	// Such an event never falls back to metadata or the default tenant.
	CodeUnknownAccount envelope.Code = "unknown_account"
	// CodeDispatchPending: ingest stored the event but some topic dispatch
	// is still pending (result "accepted", 503): the retry re-drives it.
	CodeDispatchPending envelope.Code = "dispatch_pending"
	// CodeIngestFailed: ingest returned a function error (502).
	CodeIngestFailed envelope.Code = "ingest_failed"
	// CodeIngestUnavailable: ingest timed out or was throttled (503).
	CodeIngestUnavailable envelope.Code = "ingest_unavailable"
	// CodeUnsupportedMediaType: the delivery is not JSON (a GitHub hook
	// configured for application/x-www-form-urlencoded), 415.
	CodeUnsupportedMediaType envelope.Code = "unsupported_media_type"
	// CodeUnknownSource: a delivery to a source the stage does not
	// configure (no signing secret, no tenant), 404.
	CodeUnknownSource envelope.Code = "unknown_source"
)

// StatusAcknowledged is the status of a verified delivery that carries no
// event (Ack): answered 200, nothing published.
const StatusAcknowledged envelope.Status = "acknowledged"

// Ack is a verified delivery that carries no event, such as GitHub's ping
// when a hook is created: answered 200 {"status":"acknowledged"} and
// nothing is published.
type Ack struct {
	// Reason says what the delivery was ("ping").
	Reason string
}

func (a *Ack) Error() string { return "webhook: acknowledged without an event: " + a.Reason }

// Error is a delivery the adapter refuses before (or instead of) ingest:
// the HTTP status, a machine-readable code and a message safe to return to
// the provider. Cause is logged, never returned.
type Error struct {
	Status  int
	Code    envelope.Code
	Message string
	// EventID is set once the event id is known (422, 400 after parsing).
	EventID string
	Cause   error
}

func (e *Error) Error() string {
	s := fmt.Sprintf("webhook: %d %s: %s", e.Status, e.Code, e.Message)
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Cause }

// Unauthorized is a failed verification (401).
func Unauthorized(code envelope.Code, format string, args ...any) *Error {
	return &Error{Status: http.StatusUnauthorized, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid is a verified delivery that is not a usable event (400).
func Invalid(code envelope.Code, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Unresolved is an event that maps to no tenant (422).
func Unresolved(eventID, format string, args ...any) *Error {
	return &Error{Status: http.StatusUnprocessableEntity, Code: CodeTenantUnresolved, EventID: eventID, Message: fmt.Sprintf(format, args...)}
}
