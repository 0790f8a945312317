package stripe_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/secret"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	stripewebhook "github.com/stripe/stripe-go/v76/webhook"
)

// FuzzVerify: any Stripe-Signature header and body is either verified
// (only with the real secret's signature) or refused with a 401 code;
// never a panic, never another status.
func FuzzVerify(f *testing.F) {
	body := []byte(`{"id":"evt_1","object":"event","type":"invoice.paid","created":1764676800,"data":{"object":{"id":"in_1"}}}`)
	f.Add(string(body), stripe.Sign(body, now, secretA))
	f.Add(string(body), "t=1,v1=00")
	f.Add(string(body), "t=,v1=")
	f.Add(string(body), "v1="+string(make([]byte, 64)))
	f.Add("", ",,,=,t=99999999999999999999")
	p := provider(f, &clock{t: now}, secret.List{secretA}, webhook.TenantMap{Default: "acme"})
	f.Fuzz(func(t *testing.T, b, header string) {
		err := p.Verify(context.Background(), webhook.Delivery{Body: []byte(b), Headers: map[string]string{"stripe-signature": header}})
		if err == nil {
			// Accepted only what stripe-go itself verifies with the secret.
			if stripewebhook.ValidatePayloadIgnoringTolerance([]byte(b), header, secretA) != nil {
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

// FuzzCanonicalize: any verified body becomes a valid envelope (ingest's
// parser accepts it) or a coded 400/422; never a panic.
func FuzzCanonicalize(f *testing.F) {
	for _, name := range []string{"invoice.paid.json", "checkout.session.completed.json"} {
		if b, err := os.ReadFile(filepath.Join("..", "..", "..", "events", "stripe", name)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"id":"evt_1","object":"event","type":"invoice.paid","created":1,"account":"acct_x","data":{"object":{"metadata":{"tenant_id":"acme"}}}}`))
	f.Add([]byte(`{"id":"evt_1","type":"x","created":1,"data":{"object":{"id":7,"metadata":[1]}}}`))
	p := provider(f, &clock{t: now}, secret.List{secretA}, webhook.TenantMap{Accounts: map[string]string{"acct_1PqRsTBq2Lw7Xa1k": "initech"}, Default: "acme"})
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := p.Canonicalize(context.Background(), webhook.Delivery{Body: body})
		if err != nil {
			var e *webhook.Error
			if !errors.As(err, &e) || (e.Status != 400 && e.Status != 422) || e.Code == "" {
				t.Fatalf("a refusal that is not a coded 400/422: %v", err)
			}
			return
		}
		raw, err := webhook.Encode(ev)
		if err != nil {
			return // a body that is not a JSON object is refused by Encode (400 in the handler)
		}
		if _, rerr := envelope.Parse(raw, now.Add(time.Hour), envelope.DefaultLimits()); rerr != nil && rerr.Code != envelope.CodeInvalidTimestamp &&
			rerr.Code != envelope.CodeInvalidID && rerr.Code != envelope.CodeInvalidType && rerr.Code != envelope.CodeInvalidSubject &&
			rerr.Code != envelope.CodeInvalidPayload && rerr.Code != envelope.CodeInvalidEnvelope && rerr.Code != envelope.CodePayloadTooLarge {
			t.Fatalf("canonical envelope refused with an unexpected code: %v", rerr)
		}
	})
}
