package stripe_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	stripewebhook "github.com/stripe/stripe-go/v76/webhook"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/secret"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
)

func TestCanonicalizeMapsTheEvent(t *testing.T) {
	t.Parallel()
	body := sample(t, "invoice.paid.json")
	p := provider(t, &clock{t: now}, secret.List{secretA}, webhook.TenantMap{})
	ev, err := p.Canonicalize(context.Background(), delivery(body, ""))
	require.NoError(t, err)
	require.Equal(t, "evt_1PzB7sLkdIwHu7ixQm3nT0aX", ev.ID)
	require.Equal(t, "stripe.invoice.paid", ev.Type)
	require.Equal(t, "stripe", ev.Source)
	require.Equal(t, "acme", ev.TenantID, "from data.object.metadata.tenant_id")
	require.Equal(t, time.Unix(1764676800, 0).UTC(), ev.Timestamp)
	require.Equal(t, "in_1PzB7pLkdIwHu7ixb1Zc2R9Q", ev.Subject, "the object the event is about")
	require.Equal(t, body, []byte(ev.Payload), "payload bytes are the body, untouched")
}

func TestCanonicalizeTenantResolution(t *testing.T) {
	t.Parallel()
	mapped := webhook.TenantMap{Accounts: map[string]string{"acct_connected": "initech"}, Default: "fallback"}
	unknown := webhook.CodeUnknownAccount
	cases := []struct {
		name    string
		tenants webhook.TenantMap
		account string
		meta    any // metadata.tenant_id; nil = absent
		want    string
		code    envelope.Code // when want is ""
	}{
		{"connect account through the map", mapped, "acct_connected", nil, "initech", ""},
		{"the account mapping wins over metadata", mapped, "acct_connected", "acme", "initech", ""},
		// The connected account controls its objects' metadata: it must
		// never pick the tenant (tenant spoofing through Connect).
		{"unmapped account cannot pick a tenant by metadata", mapped, "acct_attacker", "acme", "", unknown},
		{"unmapped account never falls back to the default", mapped, "acct_unknown", nil, "", unknown},
		{"unmapped account and no default", webhook.TenantMap{Accounts: map[string]string{"acct_x": "x"}}, "acct_unknown", nil, "", unknown},
		{"metadata without an account", mapped, "", "acme", "acme", ""},
		{"default when nothing else", mapped, "", nil, "fallback", ""},
		{"non-string metadata is ignored", mapped, "", 42, "fallback", ""},
		{"empty metadata value is ignored", mapped, "", "", "fallback", ""},
		{"no default: metadata still works", webhook.TenantMap{}, "", "acme", "acme", ""},
		{"nothing resolves", webhook.TenantMap{}, "", nil, "", webhook.CodeTenantUnresolved},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			obj := map[string]any{"id": "cus_1", "object": "customer", "metadata": map[string]any{}}
			if tc.meta != nil {
				obj["metadata"] = map[string]any{"tenant_id": tc.meta}
			}
			ev := map[string]any{"id": "evt_tenant", "object": "event", "type": "customer.updated", "created": 1764676800, "data": map[string]any{"object": obj}}
			if tc.account != "" {
				ev["account"] = tc.account
			}
			body, err := json.Marshal(ev)
			require.NoError(t, err)
			p := provider(t, &clock{t: now}, secret.List{secretA}, tc.tenants)
			out, err := p.Canonicalize(context.Background(), delivery(body, ""))
			if tc.want != "" {
				require.NoError(t, err)
				require.Equal(t, tc.want, out.TenantID)
				return
			}
			var e *webhook.Error
			require.True(t, errors.As(err, &e), "got %v", err)
			require.Equal(t, 422, e.Status)
			require.Equal(t, tc.code, e.Code)
			require.Equal(t, "evt_tenant", e.EventID, "the operator needs the event id to fix the mapping")
		})
	}
}

// Each refusal says why: a thin event is named as one (its created is an
// RFC 3339 string, which must not turn it into "not a Stripe event").
func TestCanonicalizeRejectsNonEvents(t *testing.T) {
	t.Parallel()
	cases := map[string]struct{ body, message string }{
		"not json":          {`{"id": "evt_1", `, "the body is not a Stripe event JSON object"},
		"array":             {`[{"id":"evt_1"}]`, "the body is not a Stripe event JSON object"},
		"trailing data":     {`{"id":"evt_1","object":"event","type":"invoice.paid","created":1} {}`, "the body is not a Stripe event JSON object"},
		"thin event":        {`{"id":"evt_1","object":"v2.core.event","type":"v1.billing.meter.error_report_triggered","created":"2026-12-02T12:00:00Z"}`, `thin events are not supported (object "v2.core.event")`},
		"thin event, data":  {`{"id":"evt_1","object":"v2.core.event","type":"v1.billing.meter.error_report_triggered","created":"2026-12-02T12:00:00.000Z","related_object":{"id":"mtr_1","type":"billing.meter","url":"/v1/billing/meters/mtr_1"},"data":{"developer_message_summary":"x"}}`, "thin events are not supported"},
		"other object":      {`{"id":"in_1","object":"invoice","type":"x","created":1}`, `object "invoice" is not supported`},
		"object not a name": {`{"id":"evt_1","object":7,"type":"invoice.paid","created":1}`, "the body is not a Stripe event JSON object"},
		"no id":             {`{"object":"event","type":"invoice.paid","created":1,"data":{"object":{}}}`, "a Stripe event needs an id and a type"},
		"no type":           {`{"id":"evt_1","object":"event","created":1,"data":{"object":{}}}`, "a Stripe event needs an id and a type"},
		"no created":        {`{"id":"evt_1","object":"event","type":"invoice.paid","data":{"object":{}}}`, "a Stripe event needs a created timestamp"},
		"created not a num": {`{"id":"evt_1","object":"event","type":"invoice.paid","created":"yesterday","data":{"object":{}}}`, "the body is not a Stripe event JSON object"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := provider(t, &clock{t: now}, secret.List{secretA}, webhook.TenantMap{Default: "acme"})
			_, err := p.Canonicalize(context.Background(), delivery([]byte(tc.body), ""))
			var e *webhook.Error
			require.True(t, errors.As(err, &e), "got %v", err)
			require.Equal(t, 400, e.Status)
			require.Equal(t, webhook.CodeInvalidEvent, e.Code)
			require.Contains(t, e.Message, tc.message)
		})
	}
}

func TestSignIsWhatStripeSends(t *testing.T) {
	t.Parallel()
	body := []byte(`{"id":"evt_1"}`)
	at := time.Unix(1796212800, 0)
	lib := stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{Payload: body, Secret: secretA, Timestamp: at})
	require.Equal(t, lib.Header, stripe.Sign(body, at, secretA), "stripe-go's own test signer agrees")
	require.Equal(t, lib.Header+",v1="+hexSig(body, at, secretB), stripe.Sign(body, at, secretA, secretB), "one v1 per secret, as during a roll")
}
