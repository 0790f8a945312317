package envelope_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/kit/canonjson"
)

// FuzzParse: the envelope parser never panics; an envelope it accepts is
// strict JSON, round-trips through Marshal and ParseMessage unchanged, and
// stays the same value once \u-escaped for SQS.
func FuzzParse(f *testing.F) {
	samples, _ := filepath.Glob("../../events/ingest/*/*.json")
	for _, p := range samples {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"id":"a","id":"b","tenantId":"acme","type":"a.b","source":"cms","timestamp":"2026-12-02T11:00:00Z","payload":{}}`))
	f.Add([]byte("{\"id\":\"e\",\"tenantId\":\"t\",\"type\":\"a.b\",\"source\":\"cms\",\"timestamp\":\"2026-12-02T11:00:00Z\",\"subject\":\"Zoë 😀\",\"payload\":{\"x\":\"\uFFFE\"}}"))
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, raw []byte) {
		ev, rerr := envelope.Parse(raw, now, envelope.DefaultLimits())
		if rerr != nil {
			if rerr.Code == "" || rerr.Message == "" {
				t.Fatalf("a rejection without code or message: %+v", rerr)
			}
			return
		}
		if err := canonjson.Check(raw, envelope.MaxPayloadDepth+1); err != nil {
			t.Fatalf("accepted a document the strict reader refuses: %v", err)
		}
		b, err := ev.Marshal()
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		back, rerr := envelope.ParseMessage(b)
		if rerr != nil {
			t.Fatalf("an accepted envelope does not parse back: %v\n%s", rerr, b)
		}
		if back.ID != ev.ID || back.TenantID != ev.TenantID || string(back.Payload) != string(ev.Payload) {
			t.Fatalf("round trip changed the envelope: %+v vs %+v", back, ev)
		}
		escaped := canonjson.EscapeRunes(b, func(r rune) bool { return !canonjson.SQSSafe(r) })
		viaSQS, rerr := envelope.ParseMessage(escaped)
		if rerr != nil {
			t.Fatalf("the SQS encoding does not parse: %v", rerr)
		}
		c1, _ := canonjson.Canonical(ev.Payload)
		c2, _ := canonjson.Canonical(viaSQS.Payload)
		if string(c1) != string(c2) || viaSQS.Subject != ev.Subject {
			t.Fatalf("the SQS encoding changed the value")
		}
	})
}
