package envelope

import "fmt"

// Code is a stable, machine-readable rejection code. Producers branch on it;
// never rename one.
type Code string

const (
	// CodeInvalidEnvelope: not a JSON object, wrong field types, unknown
	// fields, or an unsupported schemaVersion.
	CodeInvalidEnvelope Code = "invalid_envelope"
	// CodeMissingField: a required field is absent or empty.
	CodeMissingField Code = "missing_field"
	// CodeInvalidID: id is not 1..255 characters of [A-Za-z0-9._:-].
	CodeInvalidID Code = "invalid_id"
	// CodeInvalidTenant: tenantId does not match the tenant id pattern.
	CodeInvalidTenant Code = "invalid_tenant"
	// CodeInvalidType: type is not a lowercase dotted name.
	CodeInvalidType Code = "invalid_type"
	// CodeInvalidSource: source is not a lowercase producer name.
	CodeInvalidSource Code = "invalid_source"
	// CodeInvalidTimestamp: timestamp is not RFC 3339 or too far in the future.
	CodeInvalidTimestamp Code = "invalid_timestamp"
	// CodeInvalidPayload: payload is not a JSON object.
	CodeInvalidPayload Code = "invalid_payload"
	// CodeInvalidSubject: subject is too long or has control characters.
	CodeInvalidSubject Code = "invalid_subject"
	// CodeInvalidTraceparent: traceparent is not a W3C trace context value.
	CodeInvalidTraceparent Code = "invalid_traceparent"
	// CodePayloadTooLarge: the payload (or the whole envelope) exceeds the
	// accepted maximum.
	CodePayloadTooLarge Code = "payload_too_large"
	// CodeUnknownSource: the source is not a registered producer.
	CodeUnknownSource Code = "unknown_source"
	// CodeTypeNotAllowed: the producer may not publish this type.
	CodeTypeNotAllowed Code = "type_not_allowed"
	// CodeIdempotencyConflict: the id was already used for different content.
	CodeIdempotencyConflict Code = "idempotency_conflict"
)

// Error is a rejection: a code, a human message and, where it applies, the
// offending field.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s (%s)", e.Code, e.Message, e.Field)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func fieldErr(code Code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}
