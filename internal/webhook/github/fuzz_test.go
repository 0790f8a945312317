package github_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/webhooktest"
)

// FuzzVerify: any X-Hub-Signature-256 and body is either verified (only
// with the secret's signature, by the test's own signer) or refused with a
// coded 401; never a panic, never another status.
func FuzzVerify(f *testing.F) {
	body := []byte(`{"action":"opened","installation":{"id":1}}`)
	f.Add(string(body), sign(body, secretA))
	f.Add(string(body), "sha256=")
	f.Add(string(body), "sha256="+sign(body, secretB)[7:]+"00")
	f.Add("", "sha1=00")
	f.Add(string(body), "SHA256="+sign(body, secretA)[7:])
	p := provider(f, tenants)
	f.Fuzz(func(t *testing.T, b, header string) {
		err := p.Verify(context.Background(), webhooktest.Delivery([]byte(b), map[string]string{"x-hub-signature-256": header}))
		if err == nil {
			if header != sign([]byte(b), secretA) {
				t.Fatalf("verified a delivery not signed with the secret: %q %q", b, header)
			}
			return
		}
		var e *webhook.Error
		if !errors.As(err, &e) || e.Status != 401 || e.Code == "" {
			t.Fatalf("a refusal that is not a coded 401: %v", err)
		}
	})
}

// FuzzCanonicalize: any verified body and headers become a valid envelope
// or a coded 400/415/422 (a ping an acknowledgement); never a panic.
func FuzzCanonicalize(f *testing.F) {
	for _, name := range []string{"issues.opened.json", "push.json", "ping.json"} {
		f.Add(sample(f, name), "issues", "d-1", "77", "application/json")
	}
	f.Add([]byte(`{"action":null,"installation":{"id":"1"}}`), "push", "d-2", "", "application/json; charset=utf-8")
	f.Add([]byte(`payload=%7B%7D`), "push", "d-3", "1", "application/x-www-form-urlencoded")
	f.Add([]byte(`{"installation":{"id":1e400}}`), "ping", "", "x", "")
	p := provider(f, webhook.TenantMap{Accounts: tenants.Accounts, Default: "fallback"})
	f.Fuzz(func(t *testing.T, body []byte, event, delivery, hook, contentType string) {
		d := webhooktest.Delivery(body, map[string]string{
			"x-github-event": event, "x-github-delivery": delivery, "x-github-hook-id": hook, "content-type": contentType,
		})
		d.ReceivedAt = now
		ev, err := p.Canonicalize(context.Background(), d)
		webhooktest.CheckCanonical(t, d, ev, err, now.Add(time.Minute))
	})
}
