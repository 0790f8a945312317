package envelope

import (
	"bytes"
	"encoding/json"
	"time"
)

// SchemaVersion is the only envelope version this platform accepts.
const SchemaVersion = 1

// Event is the platform event envelope. On the wire it is JSON; Payload keeps
// the producer's exact bytes so hashes and claim-check round trips are
// byte-identical.
type Event struct {
	SchemaVersion int    `json:"schemaVersion,omitempty"`
	ID            string `json:"id"`
	TenantID      string `json:"tenantId"`
	Type          string `json:"type"`
	Source        string `json:"source"`
	// Timestamp is when the event happened at the producer (RFC 3339).
	Timestamp time.Time `json:"timestamp"`
	// Subject is the entity the event is about (ordering group, staleness).
	Subject string `json:"subject,omitempty"`
	// Traceparent is a W3C trace context header value.
	Traceparent string `json:"traceparent,omitempty"`
	// Payload is the event body, always a JSON object. It is absent on queue
	// messages whose payload was claim-checked to S3 (PayloadRef set).
	Payload json.RawMessage `json:"payload,omitempty"`
	// PayloadRef points at a claim-checked payload. Producers never set it;
	// ingest does, for payloads above the claim-check threshold.
	PayloadRef *PayloadRef `json:"payloadRef,omitempty"`
}

// PayloadRef is a claim-check reference to a payload stored in S3.
type PayloadRef struct {
	Bucket string `json:"bucket"`
	Key    string `json:"key"`
	Size   int    `json:"size"`
	// SHA256 is the hex digest of the payload bytes, checked on rehydration.
	SHA256 string `json:"sha256"`
}

// Marshal encodes the envelope as JSON with the payload bytes spliced in
// verbatim: encoding/json would compact a json.RawMessage and escape <, >
// and & inside it, and consumers are promised the producer's exact bytes.
// The payload must already be valid JSON: Parse and ParseMessage guarantee
// it, and it is not scanned again on this hot path.
func (e Event) Marshal() ([]byte, error) {
	if e.SchemaVersion == 0 {
		e.SchemaVersion = SchemaVersion
	}
	payload := bytes.TrimSpace(e.Payload)
	e.Payload = nil
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, err
	}
	head := bytes.TrimRight(buf.Bytes(), "\n")
	if len(payload) == 0 {
		return head, nil
	}
	// head is `{…}` without a payload member: splice it in before the brace.
	out := make([]byte, 0, len(head)+len(payload)+len(`,"payload":`))
	out = append(out, head[:len(head)-1]...)
	out = append(out, `,"payload":`...)
	out = append(out, payload...)
	return append(out, '}'), nil
}
