package standard_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/webhooktest"
)

// FuzzVerify: any headers and body are either verified (only what the
// reference library itself verifies with the source's secret) or refused
// with a coded 401; never a panic, never another status.
func FuzzVerify(f *testing.F) {
	body := []byte(`{"type":"contact.created","data":{"id":"ct_1"}}`)
	good := sign(f, "msg_1", body, secretA, now)
	f.Add(string(body), "msg_1", good["webhook-timestamp"], good["webhook-signature"])
	f.Add(string(body), "msg_1", good["webhook-timestamp"], "v1,")
	f.Add(string(body), "", "", "v2,abc v1,=")
	f.Add("", "msg_1", "99999999999999999999", good["webhook-signature"])
	p := provider(f, testkit.NewClock(now))
	wh, err := standardwebhooks.NewWebhook(secretA)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b, id, ts, sig string) {
		err := p.Verify(context.Background(), delivery("crm", []byte(b), map[string]string{"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": sig}))
		if err == nil {
			h := http.Header{}
			h.Set("webhook-id", id)
			h.Set("webhook-timestamp", ts)
			h.Set("webhook-signature", sig)
			if wh.VerifyIgnoringTimestamp([]byte(b), h) != nil {
				t.Fatalf("verified what the reference library refuses: %q %q %q %q", b, id, ts, sig)
			}
			return
		}
		var e *webhook.Error
		if !errors.As(err, &e) || e.Status != 401 || e.Code == "" {
			t.Fatalf("a refusal that is not a coded 401: %v", err)
		}
	})
}

// FuzzCanonicalize: any verified message becomes a valid envelope or a
// coded 400/422; never a panic.
func FuzzCanonicalize(f *testing.F) {
	for _, name := range []string{"contact.created.json", "invoice.payment_failed.json"} {
		f.Add(sample(f, name), "msg_1", "crm", "1764676800")
	}
	f.Add([]byte(`{"type":"A-b.C","timestamp":7,"data":{"id":null}}`), "msg:2", "unmapped", "x")
	f.Add([]byte(`{"type":"a.b","data":{"id":12345678901234567890123}}`), "", "crm", "")
	p := provider(f, testkit.NewClock(now))
	f.Fuzz(func(t *testing.T, body []byte, id, source, ts string) {
		d := delivery(source, body, map[string]string{"webhook-id": id, "webhook-timestamp": ts})
		ev, err := p.Canonicalize(context.Background(), d)
		webhooktest.CheckCanonical(t, d, ev, err, time.Now())
	})
}
