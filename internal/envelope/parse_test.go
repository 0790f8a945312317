package envelope_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envelope"
)

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func env(mut func(m map[string]any)) []byte {
	m := map[string]any{
		"id": "evt_1", "tenantId": "acme", "type": "content.published", "source": "cms",
		"timestamp": "2026-12-02T11:59:00Z", "payload": map[string]any{"k": "v"},
	}
	if mut != nil {
		mut(m)
	}
	b, _ := json.Marshal(m)
	return b
}

// deep is an envelope whose payload nests n arrays inside its object.
func deep(n int) []byte {
	return []byte(`{"id":"a","tenantId":"acme","type":"a.b","source":"cms","timestamp":"2026-12-02T11:00:00Z","payload":{"x":` +
		strings.Repeat("[", n) + strings.Repeat("]", n) + `}}`)
}

func TestParse(t *testing.T) {
	t.Parallel()
	lim := envelope.Limits{MaxPayloadBytes: 1 << 10, MaxFutureSkew: time.Hour}
	cases := []struct {
		name  string
		raw   []byte
		code  envelope.Code
		field string
	}{
		{"valid", env(nil), "", ""},
		{"valid max id", env(func(m map[string]any) { m["id"] = strings.Repeat("a", 255) }), "", ""},
		{"valid future within skew", env(func(m map[string]any) { m["timestamp"] = "2026-12-02T12:59:00Z" }), "", ""},
		{"not json", []byte(`{"id":`), envelope.CodeInvalidEnvelope, ""},
		{"empty", []byte(``), envelope.CodeInvalidEnvelope, ""},
		{"trailing data", append(env(nil), []byte(` {}`)...), envelope.CodeInvalidEnvelope, ""},
		{"unknown field", env(func(m map[string]any) { m["extra"] = 1 }), envelope.CodeInvalidEnvelope, "extra"},
		{"wrong type", env(func(m map[string]any) { m["tenantId"] = 7 }), envelope.CodeInvalidEnvelope, "tenantId"},
		{"schema version", env(func(m map[string]any) { m["schemaVersion"] = 3 }), envelope.CodeInvalidEnvelope, "schemaVersion"},
		{"missing id", env(func(m map[string]any) { delete(m, "id") }), envelope.CodeMissingField, "id"},
		{"missing type", env(func(m map[string]any) { delete(m, "type") }), envelope.CodeMissingField, "type"},
		{"missing source", env(func(m map[string]any) { delete(m, "source") }), envelope.CodeMissingField, "source"},
		{"missing timestamp", env(func(m map[string]any) { delete(m, "timestamp") }), envelope.CodeMissingField, "timestamp"},
		{"null payload", env(func(m map[string]any) { m["payload"] = nil }), envelope.CodeMissingField, "payload"},
		{"id too long", env(func(m map[string]any) { m["id"] = strings.Repeat("a", 256) }), envelope.CodeInvalidID, "id"},
		{"id charset", env(func(m map[string]any) { m["id"] = "a b" }), envelope.CodeInvalidID, "id"},
		{"tenant pattern", env(func(m map[string]any) { m["tenantId"] = "-acme" }), envelope.CodeInvalidTenant, "tenantId"},
		{"type not dotted", env(func(m map[string]any) { m["type"] = "published" }), envelope.CodeInvalidType, "type"},
		{"type too long", env(func(m map[string]any) { m["type"] = "a." + strings.Repeat("b", 127) }), envelope.CodeInvalidType, "type"},
		{"source pattern", env(func(m map[string]any) { m["source"] = "Cms" }), envelope.CodeInvalidSource, "source"},
		{"timestamp format", env(func(m map[string]any) { m["timestamp"] = "yesterday" }), envelope.CodeInvalidTimestamp, "timestamp"},
		{"timestamp far future", env(func(m map[string]any) { m["timestamp"] = "2026-12-02T13:00:01Z" }), envelope.CodeInvalidTimestamp, "timestamp"},
		{"payload array", env(func(m map[string]any) { m["payload"] = []int{1} }), envelope.CodeInvalidPayload, "payload"},
		{"payload number", env(func(m map[string]any) { m["payload"] = 1 }), envelope.CodeInvalidPayload, "payload"},
		{"subject too long", env(func(m map[string]any) { m["subject"] = strings.Repeat("é", 256) }), envelope.CodeInvalidSubject, "subject"},
		{"traceparent", env(func(m map[string]any) { m["traceparent"] = "00-abc-def-01" }), envelope.CodeInvalidTraceparent, "traceparent"},
		{"payload too large", env(func(m map[string]any) { m["payload"] = map[string]string{"x": strings.Repeat("x", 1<<10)} }), envelope.CodePayloadTooLarge, "payload"},
		{"envelope too large", env(func(m map[string]any) { m["payload"] = map[string]string{"x": strings.Repeat("x", 16<<10)} }), envelope.CodePayloadTooLarge, ""},
		{"producer payloadRef", env(func(m map[string]any) { m["payloadRef"] = map[string]any{"bucket": "b"} }), envelope.CodeInvalidEnvelope, "payloadRef"},
		{"duplicate id", []byte(`{"id":"a","id":"b","tenantId":"acme","type":"a.b","source":"cms","timestamp":"2026-12-02T11:00:00Z","payload":{}}`), envelope.CodeInvalidEnvelope, ""},
		{"duplicate in payload", []byte(`{"id":"a","tenantId":"acme","type":"a.b","source":"cms","timestamp":"2026-12-02T11:00:00Z","payload":{"x":{"k":1,"k":2}}}`), envelope.CodeInvalidEnvelope, "payload.x"},
		{"payload 64 deep", deep(63), "", ""},
		{"payload 65 deep", deep(64), envelope.CodeInvalidPayload, "payload"},
		{"payload 3000 deep", deep(3000), envelope.CodeInvalidPayload, "payload"},
		{"invalid utf8 in payload", []byte("{\"id\":\"a\",\"tenantId\":\"acme\",\"type\":\"a.b\",\"source\":\"cms\",\"timestamp\":\"2026-12-02T11:00:00Z\",\"payload\":{\"x\":\"\xff\xfe\"}}"), envelope.CodeInvalidPayload, "payload"},
		{"nul escape is fine", []byte(`{"id":"a","tenantId":"acme","type":"a.b","source":"cms","timestamp":"2026-12-02T11:00:00Z","payload":{"x":"\u0000"}}`), "", ""},
		{"raw nul", []byte("{\"id\":\"a\",\"tenantId\":\"acme\",\"type\":\"a.b\",\"source\":\"cms\",\"timestamp\":\"2026-12-02T11:00:00Z\",\"payload\":{\"x\":\"\x00\"}}"), envelope.CodeInvalidEnvelope, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev, err := envelope.Parse(tc.raw, now, lim)
			if tc.code == "" {
				require.Nil(t, err)
				require.NotEmpty(t, ev.ID)
				return
			}
			require.NotNil(t, err)
			require.Equal(t, tc.code, err.Code, err.Message)
			require.Equal(t, tc.field, err.Field)
			require.NotEmpty(t, err.Message)
		})
	}
}

func TestParseKeepsPayloadBytes(t *testing.T) {
	t.Parallel()
	raw := []byte(`{"id":"e","tenantId":"t","type":"a.b","source":"cms","timestamp":"2026-12-02T11:00:00Z","payload":{"b":1,  "a":[2, 3]}}`)
	ev, err := envelope.Parse(raw, now, envelope.DefaultLimits())
	require.Nil(t, err)
	require.Equal(t, `{"b":1,  "a":[2, 3]}`, string(ev.Payload))
}

func TestParseMessage(t *testing.T) {
	t.Parallel()
	ref := `{"bucket":"b","key":"payloads/t/e/x.json","size":10,"sha256":"` + strings.Repeat("a", 64) + `"}`
	base := `{"schemaVersion":1,"id":"e","tenantId":"t","type":"a.b","source":"cms","timestamp":"2030-01-01T00:00:00Z"`

	ev, err := envelope.ParseMessage([]byte(base + `,"payloadRef":` + ref + `}`))
	require.Nil(t, err, "a claim-checked message parses; future timestamps are not checked on messages")
	require.NotNil(t, ev.PayloadRef)
	require.Equal(t, 10, ev.PayloadRef.Size)

	_, err = envelope.ParseMessage([]byte(base + `,"payload":{},"payloadRef":` + ref + `}`))
	require.NotNil(t, err)
	require.Equal(t, envelope.CodeInvalidEnvelope, err.Code)

	_, err = envelope.ParseMessage([]byte(base + `}`))
	require.NotNil(t, err)
	require.Equal(t, envelope.CodeMissingField, err.Code)
}

func TestMarshalRoundTrip(t *testing.T) {
	t.Parallel()
	ev, err := envelope.Parse(env(func(m map[string]any) { m["subject"] = "s-1" }), now, envelope.DefaultLimits())
	require.Nil(t, err)
	b, merr := ev.Marshal()
	require.NoError(t, merr)
	back, err := envelope.ParseMessage(b)
	require.Nil(t, err)
	require.Equal(t, ev, back)
}

func TestMarshalKeepsPayloadBytes(t *testing.T) {
	t.Parallel()
	raw := []byte(`{"id":"e","tenantId":"t","type":"a.b","source":"cms","timestamp":"2026-12-02T11:00:00Z","subject":"a&b","payload":{"html": "<b>&amp;</b>",  "n": 1.50}}`)
	ev, err := envelope.Parse(raw, now, envelope.DefaultLimits())
	require.Nil(t, err)
	b, merr := ev.Marshal()
	require.NoError(t, merr)
	require.Contains(t, string(b), `"payload":{"html": "<b>&amp;</b>",  "n": 1.50}`, "payload bytes are verbatim")
	require.Contains(t, string(b), `"subject":"a&b"`, "no HTML escaping anywhere")
	back, perr := envelope.ParseMessage(b)
	require.Nil(t, perr)
	require.Equal(t, ev, back)
}
