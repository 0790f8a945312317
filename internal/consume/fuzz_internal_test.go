package consume

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/siteswarm/eventplatform/internal/kit/canonjson"
)

// FuzzParseMessage: the SQS message → envelope decoder never panics; what
// it accepts survives the SQS body encoding (\u escapes of what SQS and its
// emulator refuse) as the same value; what it refuses is poison with a
// code, never a retry.
func FuzzParseMessage(f *testing.F) {
	f.Add(`{"schemaVersion":1,"id":"e","tenantId":"acme","type":"a.b","source":"cms","timestamp":"2026-12-02T11:00:00Z","payload":{"x":1}}`, "acme/e")
	f.Add("{\"schemaVersion\":1,\"id\":\"e\",\"tenantId\":\"acme\",\"type\":\"a.b\",\"source\":\"cms\",\"timestamp\":\"2026-12-02T11:00:00Z\",\"subject\":\"😀\",\"payload\":{\"x\":\"\\ufffe\\ud83d\\ude00\"}}", "e")
	f.Add(`{"schemaVersion":1,"id":"e","tenantId":"acme","type":"a.b","source":"cms","timestamp":"2026-12-02T11:00:00Z","payloadRef":{"bucket":"b","key":"k","size":1,"sha256":"0000000000000000000000000000000000000000000000000000000000000000"}}`, "")
	f.Add(`{"id":"e","id":"f"}`, "other/e")
	f.Fuzz(func(t *testing.T, body, key string) {
		attrs := map[string]events.SQSMessageAttribute{}
		if key != "" {
			attrs[attrEventKey] = events.SQSMessageAttribute{DataType: "String", StringValue: &key}
		}
		rec := events.SQSMessage{MessageId: "m", Body: body, MessageAttributes: attrs}
		m, fail := parse(rec, "a.events")
		if fail != nil {
			if fail.kind != KindPermanent || fail.code == "" {
				t.Fatalf("a refused message must be coded poison: %+v", fail)
			}
			return
		}
		if m.Key != m.Event.ID && m.Key != m.Event.TenantID+"/"+m.Event.ID {
			t.Fatalf("key %q does not name event %q of %q", m.Key, m.Event.ID, m.Event.TenantID)
		}
		rec.Body = string(canonjson.EscapeRunes([]byte(body), func(r rune) bool { return !canonjson.SQSSafe(r) }))
		again, fail := parse(rec, "a.events")
		if fail != nil {
			t.Fatalf("the SQS encoding of an accepted body is refused: %s", fail.msg)
		}
		a, _ := canonjson.Canonical(m.Event.Payload)
		b, _ := canonjson.Canonical(again.Event.Payload)
		if string(a) != string(b) || again.Event.Subject != m.Event.Subject {
			t.Fatalf("the SQS encoding changed the message")
		}
	})
}

// FuzzCompletionMark: a copy's completionOf mark is read strictly: what
// is accepted is exactly the mark of its hop and owner (so a copy names
// one lease owner, hop 1..maxCompletionHops, never a malformed id), and
// what is refused is an error, never a panic.
func FuzzCompletionMark(f *testing.F) {
	for _, s := range []string{"1/0f1e2d3c-aaaa-bbbb-cccc-000000000000", "8/m", "9/m", "0/m", "01/m", "+1/m", "1/", "/m", "1/a/b", "1/a b",
		"1/\x00", "1/é", "99999999999999999999/m", "-1/m", "1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		owner, hop, err := parseCompletionMark(v)
		if err != nil {
			return
		}
		if hop < 1 || hop > maxCompletionHops || owner == "" {
			t.Fatalf("%q accepted as hop %d owner %q", v, hop, owner)
		}
		if completionMark(hop, owner) != v {
			t.Fatalf("%q is not the mark of hop %d owner %q", v, hop, owner)
		}
	})
}
