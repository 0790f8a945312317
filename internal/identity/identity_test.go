package identity_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/identity"
	"github.com/siteswarm/eventplatform/internal/topology"
)

var (
	internal = topology.Producer{Source: "cms"}
	stripe   = topology.Producer{Source: "stripe", Provider: topology.ProviderStripe}
	now      = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
)

func parse(t *testing.T, m map[string]any) envelope.Event {
	t.Helper()
	base := map[string]any{
		"id": "e1", "tenantId": "acme", "type": "content.published", "source": "cms",
		"timestamp": "2026-12-02T11:00:00Z", "payload": map[string]any{"k": "v"},
	}
	for k, v := range m {
		base[k] = v
	}
	b, err := json.Marshal(base)
	require.NoError(t, err)
	ev, rerr := envelope.Parse(b, now, envelope.DefaultLimits())
	require.Nil(t, rerr)
	return ev
}

func raw(t *testing.T, body string) envelope.Event {
	t.Helper()
	ev, rerr := envelope.Parse([]byte(`{"id":"e1","tenantId":"acme","type":"content.published","source":"cms","timestamp":"2026-12-02T11:00:00Z","payload":`+body+`}`), now, envelope.DefaultLimits())
	require.Nil(t, rerr)
	return ev
}

func TestContentIdentity(t *testing.T) {
	t.Parallel()
	base := identity.Of(internal, parse(t, nil))
	require.True(t, identity.Same(base, internal, parse(t, map[string]any{"timestamp": "2026-12-02T10:00:00Z"})), "the timestamp is not content: producers stamp retries")
	for name, m := range map[string]map[string]any{
		"payload": {"payload": map[string]any{"k": "w"}},
		"tenant":  {"tenantId": "other"},
		"type":    {"type": "content.deleted"},
		"subject": {"subject": "x"},
	} {
		require.False(t, identity.Same(base, internal, parse(t, m)), name)
	}
	// Same value, other text: key order, whitespace, escapes, number forms.
	a := identity.Of(internal, raw(t, `{"b":[1,2],"a":"é","n":1.50}`))
	for _, body := range []string{
		`{"a":"\u00e9","b":[1, 2],"n":1.5}`,
		`{ "n" : 15e-1 , "b" : [ 1 , 2 ] , "a" : "\u00E9" }`,
	} {
		require.True(t, identity.Same(a, internal, raw(t, body)), body)
	}
	require.False(t, identity.Same(a, internal, raw(t, `{"a":"é","b":[2,1],"n":1.5}`)), "array order is content")
}

// Stripe re-serializes an event on every delivery attempt: pending_webhooks
// and request change, key order is not promised. The identity is its
// immutable part.
func TestStripeIdentityIgnoresWhatStripeChangesOnRetry(t *testing.T) {
	t.Parallel()
	first := stripeEvent(t, `{"id":"evt_1","object":"event","api_version":"2024-06-20","created":1733130000,"type":"invoice.paid","livemode":false,"pending_webhooks":2,"request":{"id":null,"idempotency_key":null},"data":{"object":{"id":"in_1","amount_paid":4200,"metadata":{"tenant_id":"acme"}}}}`)
	retry := stripeEvent(t, `{"pending_webhooks":1,"data":{"object":{"metadata":{"tenant_id":"acme"},"amount_paid":4200,"id":"in_1"}},"type":"invoice.paid","created":1733130000,"api_version":"2024-06-20","id":"evt_1","object":"event","livemode":false,"request":{"id":"req_9","idempotency_key":"k"}}`)
	stored := identity.Of(stripe, first)
	require.Contains(t, stored, "stripe1:")
	require.True(t, identity.Same(stored, stripe, retry), "a Stripe retry is the same event")
	tampered := stripeEvent(t, `{"id":"evt_1","object":"event","api_version":"2024-06-20","created":1733130000,"type":"invoice.paid","pending_webhooks":1,"data":{"object":{"id":"in_1","amount_paid":1,"metadata":{"tenant_id":"acme"}}}}`)
	require.False(t, identity.Same(stored, stripe, tampered), "a different body under the same id is a conflict")
	other := stripeEvent(t, `{"id":"evt_1","object":"event","api_version":"2024-06-20","created":1733130000,"type":"invoice.paid","account":"acct_1","pending_webhooks":1,"data":{"object":{"id":"in_1","amount_paid":4200,"metadata":{"tenant_id":"acme"}}}}`)
	require.False(t, identity.Same(stored, stripe, other), "the account is part of the identity")
}

func stripeEvent(t *testing.T, body string) envelope.Event {
	t.Helper()
	ev, rerr := envelope.Parse([]byte(`{"id":"evt_1","tenantId":"acme","type":"stripe.invoice.paid","source":"stripe","timestamp":"2026-12-02T11:00:00Z","payload":`+body+`}`), now, envelope.DefaultLimits())
	require.Nil(t, rerr)
	return ev
}

// Hashes stored before schemes existed still compare the way they were
// made (compacted payload, key order significant).
func TestLegacyHashesStillCompare(t *testing.T) {
	t.Parallel()
	ev := raw(t, `{"a": 1, "b": 2}`)
	require.Len(t, identity.LegacyOf(ev), 64, "legacy hashes are bare hex")
	require.True(t, identity.Same(identity.LegacyOf(ev), internal, ev))
	require.False(t, identity.Same(identity.LegacyOf(ev), internal, raw(t, `{"b":2,"a":1}`)), "key order was significant then")
}
