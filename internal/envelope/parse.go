package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/siteswarm/eventplatform/internal/kit/canonjson"
)

// Limits bound what ingest accepts.
type Limits struct {
	// MaxPayloadBytes is the largest accepted payload (default 1 MiB).
	MaxPayloadBytes int
	// MaxFutureSkew is how far in the future a timestamp may be (producer
	// clock skew); anything later is rejected (default 1 h).
	MaxFutureSkew time.Duration
}

// DefaultLimits are the platform defaults.
func DefaultLimits() Limits {
	return Limits{MaxPayloadBytes: 1 << 20, MaxFutureSkew: time.Hour}
}

// MaxPayloadDepth bounds how deeply a payload's objects and arrays nest
// (the payload object itself is level 1). Deeper documents are refused at
// ingest rather than becoming a subscriber's poison pill: recursive JSON
// parsers downstream (Python's, many others) give up long before Go's.
const MaxPayloadDepth = 64

// envelopeOverhead is what the non-payload fields may add to the raw
// envelope size: ids, names and the JSON punctuation are bounded well below.
const envelopeOverhead = 8 << 10

// Field limits; with the patterns (syntax.go) they are mirrored by
// events/schema/platform-event.schema.json; a test keeps the two in step.
const (
	MaxIDLen      = 255
	MaxTypeLen    = 128
	MaxSubjectLen = 255
)

// ValidTenant reports whether s is a valid tenant id (adapters resolving a
// tenant from provider data check it before building an envelope).
func ValidTenant(s string) bool { return tenantSyntax(s) }

// ValidID reports whether s is a valid event id.
func ValidID(s string) bool { return len(s) <= MaxIDLen && idSyntax(s) }

// wire mirrors Event with every field loosely typed, so a bad value produces
// a field-specific rejection instead of a generic decode error.
//
// An optional member sent as null is absent (as the published schema says):
// many serializers write an unset field that way.
type wire struct {
	SchemaVersion json.RawMessage `json:"schemaVersion"`
	ID            *string         `json:"id"`
	TenantID      *string         `json:"tenantId"`
	Type          *string         `json:"type"`
	Source        *string         `json:"source"`
	Timestamp     *string         `json:"timestamp"`
	Subject       *string         `json:"subject"`
	Traceparent   *string         `json:"traceparent"`
	Payload       json.RawMessage `json:"payload"`
	// PayloadRef stays raw so a producer's "payloadRef":null is seen too.
	PayloadRef json.RawMessage `json:"payloadRef"`
	ref        *PayloadRef
}

// members are the envelope's member names, exactly: encoding/json matches
// names without regard to case, and the schema (like every other JSON
// reader) does not.
var members = map[string]bool{"schemaVersion": true, "id": true, "tenantId": true, "type": true, "source": true,
	"timestamp": true, "subject": true, "traceparent": true, "payload": true, "payloadRef": true}

// Parse strictly parses and validates an envelope submitted by a producer.
// Producers may not set payloadRef. The returned error is always a
// rejection, never an infrastructure failure.
func Parse(raw []byte, now time.Time, lim Limits) (Event, *Error) {
	if len(raw) > lim.MaxPayloadBytes+envelopeOverhead {
		return Event{}, &Error{Code: CodePayloadTooLarge, Message: fmt.Sprintf("envelope is %d bytes; the payload limit is %d bytes", len(raw), lim.MaxPayloadBytes)}
	}
	w, rerr := decode(raw)
	if rerr != nil {
		return Event{}, rerr
	}
	if w.PayloadRef != nil { // even null: the member is the platform's
		return Event{}, fieldErr(CodeInvalidEnvelope, "payloadRef", "payloadRef is set by the platform, producers send the payload itself")
	}
	ev, rerr := validate(w, true)
	if rerr != nil {
		return Event{}, rerr
	}
	if len(ev.Payload) > lim.MaxPayloadBytes {
		return Event{}, fieldErr(CodePayloadTooLarge, "payload", "payload is %d bytes; the limit is %d bytes", len(ev.Payload), lim.MaxPayloadBytes)
	}
	if ev.Timestamp.After(now.Add(lim.MaxFutureSkew)) {
		return Event{}, fieldErr(CodeInvalidTimestamp, "timestamp", "timestamp %s is more than %s in the future", ev.Timestamp.Format(time.RFC3339), lim.MaxFutureSkew)
	}
	return ev, nil
}

// ParseMessage strictly parses an envelope taken off a topic queue: the same
// rules as Parse, except that a claim-checked payloadRef replaces the payload
// and the timestamp is not compared with the clock (the event was accepted
// already).
func ParseMessage(raw []byte) (Event, *Error) {
	w, rerr := decode(raw)
	if rerr != nil {
		return Event{}, rerr
	}
	if w.PayloadRef != nil && !isNull(w.PayloadRef) {
		w.ref = new(PayloadRef)
		if err := json.Unmarshal(w.PayloadRef, w.ref); err != nil {
			return Event{}, fieldErr(CodeInvalidEnvelope, "payloadRef", "payloadRef must be an object with bucket, key, size and sha256")
		}
		if w.Payload != nil {
			return Event{}, fieldErr(CodeInvalidEnvelope, "payloadRef", "payload and payloadRef are mutually exclusive")
		}
		if w.ref.Key == "" || w.ref.Bucket == "" || len(w.ref.SHA256) != 64 {
			return Event{}, fieldErr(CodeInvalidEnvelope, "payloadRef", "payloadRef needs bucket, key and a hex sha256")
		}
	}
	return validate(w, w.ref == nil)
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

func decode(raw []byte) (wire, *Error) {
	var w wire
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return w, &Error{Code: CodeInvalidEnvelope, Message: "envelope must be a JSON object"}
	}
	if rerr := strict(trimmed); rerr != nil {
		return w, rerr
	}
	if rerr := exactMembers(trimmed); rerr != nil {
		return w, rerr
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return w, decodeError(err)
	}
	if dec.More() {
		return w, &Error{Code: CodeInvalidEnvelope, Message: "envelope must be a single JSON object"}
	}
	if _, err := dec.Token(); err == nil {
		return w, &Error{Code: CodeInvalidEnvelope, Message: "unexpected data after the envelope object"}
	}
	return w, nil
}

// strict refuses what encoding/json would let through but readers disagree
// on: duplicate member names at any depth (which one wins differs between
// parsers), text that is not UTF-8 (JSON requires it, and DynamoDB and SQS
// cannot carry it), and payloads nested deeper than MaxPayloadDepth.
func strict(raw []byte) *Error {
	err := canonjson.Check(raw, MaxPayloadDepth+1)
	if err == nil {
		return nil
	}
	var e *canonjson.Error
	if !errors.As(err, &e) {
		return &Error{Code: CodeInvalidEnvelope, Message: err.Error()}
	}
	inPayload := e.Path == "payload" || strings.HasPrefix(e.Path, "payload.") || strings.HasPrefix(e.Path, "payload[")
	switch e.Kind {
	case canonjson.KindDuplicateKey:
		return &Error{Code: CodeInvalidEnvelope, Field: e.Path, Message: "ambiguous JSON: " + e.Error()}
	case canonjson.KindTooDeep:
		return &Error{Code: CodeInvalidPayload, Field: "payload", Message: fmt.Sprintf("payload nests deeper than %d levels", MaxPayloadDepth)}
	case canonjson.KindInvalidUTF8:
		if inPayload {
			return &Error{Code: CodeInvalidPayload, Field: "payload", Message: "payload is not valid UTF-8: " + e.Error()}
		}
		return &Error{Code: CodeInvalidEnvelope, Field: e.Path, Message: "envelope is not valid UTF-8: " + e.Error()}
	}
	return &Error{Code: CodeInvalidEnvelope, Message: "envelope is not valid JSON: " + e.Error()}
}

func decodeError(err error) *Error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return fieldErr(CodeInvalidEnvelope, typeErr.Field, "field %q must be a %s, got %s", typeErr.Field, typeName(typeErr.Type.Kind().String()), typeErr.Value)
	}
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		field = strings.Trim(field, `"`)
		return fieldErr(CodeInvalidEnvelope, field, "unknown field %q (the envelope is strict: schemaVersion 1 fields only)", field)
	}
	return &Error{Code: CodeInvalidEnvelope, Message: "envelope is not valid JSON: " + err.Error()}
}

func typeName(kind string) string {
	switch kind {
	case "ptr", "string":
		return "string"
	case "int":
		return "integer"
	case "struct":
		return "object"
	}
	return kind
}

// exactMembers refuses a member whose name is not exactly one of the
// envelope's (a top-level scan of JSON that strict has checked already).
func exactMembers(obj []byte) *Error {
	depth, key := 0, true
	for i := 0; i < len(obj); i++ {
		switch c := obj[i]; c {
		case '{', '[':
			depth++
			key = c == '{'
		case '}', ']':
			depth--
		case ',':
			key = depth == 1
		case ':':
			key = false
		case '"':
			start := i
			for i++; obj[i] != '"'; i++ {
				if obj[i] == '\\' {
					i++
				}
			}
			if depth == 1 && key {
				var name string
				_ = json.Unmarshal(obj[start:i+1], &name) // valid JSON: strict said so
				if !members[name] {
					return fieldErr(CodeInvalidEnvelope, name, "unknown field %q (the envelope is strict: schemaVersion 1 fields only, names as spelled in the schema)", name)
				}
			}
		}
	}
	return nil
}

// schemaVersionOne reports whether raw is absent, null or the number 1
// in any spelling JSON allows (1, 1.0, 1e0): the schema's "const": 1
// compares numbers by value.
func schemaVersionOne(raw json.RawMessage) bool {
	if raw == nil || isNull(raw) {
		return true
	}
	raw = bytes.TrimSpace(raw)
	var n json.Number // takes a quoted number too: refused first
	if raw[0] == '"' || json.Unmarshal(raw, &n) != nil {
		return false
	}
	r, ok := new(big.Rat).SetString(n.String())
	return ok && r.Cmp(big.NewRat(SchemaVersion, 1)) == 0
}

// ParseTimestamp parses an envelope timestamp: RFC 3339 as
// timestampSyntax spells it, a real calendar date.
func ParseTimestamp(s string) (time.Time, bool) {
	if !timestampSyntax(s) {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, strings.ToUpper(s))
	return t, err == nil
}

func validate(w wire, needPayload bool) (Event, *Error) {
	if !schemaVersionOne(w.SchemaVersion) {
		return Event{}, fieldErr(CodeInvalidEnvelope, "schemaVersion", "schemaVersion %s is not supported (want %d)", truncateRaw(w.SchemaVersion), SchemaVersion)
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"id", w.ID}, {"tenantId", w.TenantID}, {"type", w.Type}, {"source", w.Source}, {"timestamp", w.Timestamp}} {
		if f.v == nil || *f.v == "" {
			return Event{}, fieldErr(CodeMissingField, f.name, "field %q is required", f.name)
		}
	}
	if needPayload && (w.Payload == nil || bytes.Equal(w.Payload, []byte("null"))) {
		return Event{}, fieldErr(CodeMissingField, "payload", `field "payload" is required`)
	}
	ev := Event{
		SchemaVersion: SchemaVersion,
		ID:            *w.ID,
		TenantID:      *w.TenantID,
		Type:          *w.Type,
		Source:        *w.Source,
		PayloadRef:    w.ref,
	}
	if !ValidID(ev.ID) {
		return Event{}, fieldErr(CodeInvalidID, "id", "id must be 1 to %d characters of letters, digits and . _ : - starting with a letter or digit", MaxIDLen)
	}
	if !tenantSyntax(ev.TenantID) {
		return Event{}, fieldErr(CodeInvalidTenant, "tenantId", "tenantId must be 1 to 64 lowercase letters, digits, _ or -, starting with a letter or digit")
	}
	if len(ev.Type) > MaxTypeLen || !typeSyntax(ev.Type) {
		return Event{}, fieldErr(CodeInvalidType, "type", "type must be lowercase dotted words (e.g. stripe.invoice.paid) of at most %d characters", MaxTypeLen)
	}
	if !sourceSyntax(ev.Source) {
		return Event{}, fieldErr(CodeInvalidSource, "source", "source must be a lowercase producer name (letters, digits, -), at most 64 characters")
	}
	ts, ok := ParseTimestamp(*w.Timestamp)
	if !ok {
		return Event{}, fieldErr(CodeInvalidTimestamp, "timestamp", "timestamp must be an RFC 3339 date-time (e.g. 2026-12-02T10:00:00Z or 2026-12-02T11:00:00.5+01:00)")
	}
	ev.Timestamp = ts
	if w.Subject != nil {
		s := *w.Subject
		if !ValidSubject(s) {
			return Event{}, fieldErr(CodeInvalidSubject, "subject", "subject must be 1 to %d printable characters", MaxSubjectLen)
		}
		ev.Subject = s
	}
	if w.Traceparent != nil {
		tp := *w.Traceparent
		if !traceparentSyntax(tp) || strings.HasPrefix(tp, "ff") || tp[3:35] == strings.Repeat("0", 32) || tp[36:52] == strings.Repeat("0", 16) {
			return Event{}, fieldErr(CodeInvalidTraceparent, "traceparent", "traceparent must be a W3C trace context value (00-<32 hex>-<16 hex>-<2 hex>)")
		}
		ev.Traceparent = tp
	}
	if w.Payload != nil {
		p := bytes.TrimSpace(w.Payload)
		if len(p) == 0 || p[0] != '{' {
			return Event{}, fieldErr(CodeInvalidPayload, "payload", "payload must be a JSON object")
		}
		ev.Payload = p
	}
	return ev, nil
}

// ValidSubject reports whether s is a usable subject: 1 to MaxSubjectLen
// printable characters of valid UTF-8.
func ValidSubject(s string) bool {
	return s != "" && utf8.RuneCountInString(s) <= MaxSubjectLen && utf8.ValidString(s) && strings.IndexFunc(s, unicode.IsControl) < 0
}

// truncateRaw quotes a member's JSON for a message, cut to 32 bytes.
func truncateRaw(raw json.RawMessage) string {
	if len(raw) > 32 {
		return string(raw[:32]) + "…"
	}
	return string(raw)
}
