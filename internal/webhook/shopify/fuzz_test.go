package shopify_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/webhooktest"
)

// FuzzVerify: any X-Shopify-Hmac-Sha256 and body is either verified (only
// with the secret's HMAC, by the test's own signer) or refused with a
// coded 401; never a panic, never another status.
func FuzzVerify(f *testing.F) {
	body := []byte(`{"id":1,"customer":{"id":2}}`)
	f.Add(string(body), sign(body, secretA))
	f.Add(string(body), "")
	f.Add(string(body), "AAAA")
	f.Add("", sign(nil, secretB))
	p := provider(f)
	f.Fuzz(func(t *testing.T, b, header string) {
		err := p.Verify(context.Background(), webhooktest.Delivery([]byte(b), map[string]string{"x-shopify-hmac-sha256": header}))
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

// FuzzCanonicalize: any verified delivery becomes a valid envelope or a
// coded 400/422; never a panic.
func FuzzCanonicalize(f *testing.F) {
	for _, name := range []string{"orders.create.json", "customers.redact.json"} {
		f.Add(sample(f, name), "orders/create", "acme.myshopify.com", "w-1", "2026-12-02T12:58:13.403541Z")
	}
	f.Add([]byte(`{"id":"1e99","customer":{"id":-1}}`), "app/uninstalled", "ACME.myshopify.com", "w-2", "yesterday")
	f.Add([]byte(`{}`), "shop/redact", "globex.myshopify.com", "", "")
	p := provider(f)
	f.Fuzz(func(t *testing.T, body []byte, topic, shop, id, triggered string) {
		d := webhooktest.Delivery(body, map[string]string{
			"x-shopify-topic": topic, "x-shopify-shop-domain": shop, "x-shopify-webhook-id": id, "x-shopify-triggered-at": triggered,
		})
		d.ReceivedAt = now
		ev, err := p.Canonicalize(context.Background(), d)
		webhooktest.CheckCanonical(t, d, ev, err, now.Add(time.Minute))
	})
}
