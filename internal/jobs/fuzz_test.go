package jobs

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzParseWake: a wake body from the queue is either a well-formed wake
// that reads back the same when re-encoded, or a poison refusal (dropped
// with its reason, never retried); it never panics.
func FuzzParseWake(f *testing.F) {
	e := &Engine{kinds: map[string]Kind{"counter": {Name: "counter"}, "enrich": {Name: "enrich", BestEffort: true}}}
	for _, seed := range []string{
		`{"tenantId":"acme","idempotencyKey":"k1","payload":{"kind":"counter","jobId":"job_0123456789abcdef0123456789abcdef","generation":1}}`,
		`{"tenantId":"acme","idempotencyKey":"k1","payload":{"kind":"counter","jobId":"job_0123456789abcdef0123456789abcdef","generation":2,"notBefore":"2026-12-03T00:00:00Z"}}`,
		`{"tenantId":"acme","idempotencyKey":"k1","payload":{"kind":"enrich","ref":"evt_1"}}`,
		`{"tenantId":"acme","idempotencyKey":"k1","payload":{"kind":"nope","jobId":"job_0123456789abcdef0123456789abcdef","generation":1}}`,
		`{"tenantId":"acme","payload":{}}`, `[]`, `{"a":1,"a":2}`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		w, err := e.ParseWake(body)
		if err != nil {
			var p *poison
			if !errors.As(err, &p) {
				t.Fatalf("a refusal that is not poison: %v", err)
			}
			return
		}
		again, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		w2, err := e.ParseWake(again)
		if err != nil {
			t.Fatalf("an accepted wake re-encoded is refused: %v (%s)", err, again)
		}
		b2, _ := json.Marshal(w2)
		if string(b2) != string(again) {
			t.Fatalf("round trip changed the wake: %s vs %s", again, b2)
		}
	})
}
