package stripe_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
)

var rules = stripe.Declaration.Rules

func TestCustomer(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ body, want string }{
		"invoice":                           {`{"data":{"object":{"id":"in_1","object":"invoice","customer":"cus_A"}}}`, "cus_A"},
		"expanded customer":                 {`{"data":{"object":{"id":"sub_1","object":"subscription","customer":{"id":"cus_B","object":"customer"}}}}`, "cus_B"},
		"the customer itself":               {`{"data":{"object":{"id":"cus_C","object":"customer","metadata":{}}}}`, "cus_C"},
		"a customer with a customer member": {`{"data":{"object":{"id":"cus_D","object":"customer","customer":"cus_other"}}}`, "cus_D"},
		"guest checkout":                    {`{"data":{"object":{"id":"cs_1","object":"checkout.session","customer":null}}}`, ""},
		"no customer member":                {`{"data":{"object":{"id":"price_1","object":"price"}}}`, ""},
		"customer not a string":             {`{"data":{"object":{"id":"in_2","object":"invoice","customer":42}}}`, ""},
		"expanded without id":               {`{"data":{"object":{"id":"in_3","object":"invoice","customer":{"object":"customer"}}}}`, ""},
		"empty customer":                    {`{"data":{"object":{"id":"in_4","object":"invoice","customer":""}}}`, ""},
		"control character":                 {`{"data":{"object":{"id":"in_5","object":"invoice","customer":"cus_\u0001"}}}`, ""},
		"too long":                          {`{"data":{"object":{"object":"invoice","customer":"` + strings.Repeat("c", envelope.MaxSubjectLen+1) + `"}}}`, ""},
		"longest usable":                    {`{"data":{"object":{"object":"invoice","customer":"` + strings.Repeat("é", envelope.MaxSubjectLen) + `"}}}`, strings.Repeat("é", envelope.MaxSubjectLen)},
		"not an object":                     {`[1,2]`, ""},
		"not JSON":                          {`{"data":`, ""},
		"data not an object":                {`{"data":"x"}`, ""},
		"empty":                             {``, ""},
	} {
		require.Equal(t, tc.want, stripe.Customer([]byte(tc.body)), name)
		require.Equal(t, tc.want, rules.Owner([]byte(tc.body)), "%s: the owner is the customer", name)
	}
}

// The committed Stripe samples: every routed billing event names its
// customer.
func TestCustomerOfTheSamples(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		"checkout.session.completed.json":    "cus_QsT0oP4rNm6uVx",
		"customer.created.json":              "cus_QtU1pQ5sOn7vWy",
		"customer.subscription.updated.json": "cus_QrS9nO3qMl5tUw",
		"invoice.paid.json":                  "cus_QqR8mN2pLk4sTv",
	}
	for file, customer := range want {
		body, err := os.ReadFile(filepath.Join("..", "..", "..", "events", "stripe", file))
		require.NoError(t, err)
		require.Equal(t, customer, stripe.Customer(body), file)
	}
}

// A Stripe event orders by its customer, not by the object it is about;
// one naming no customer is in its tenant's sequence.
func TestOrderingKeyIsTheCustomer(t *testing.T) {
	t.Parallel()
	invoice := envelope.Event{Source: "stripe", Subject: "in_1", Payload: []byte(`{"data":{"object":{"id":"in_1","object":"invoice","customer":"cus_A"}}}`)}
	require.Equal(t, "cus_A", rules.OrderingKey(invoice))
	guest := envelope.Event{Source: "stripe", Subject: "cs_1", Payload: []byte(`{"data":{"object":{"id":"cs_1","object":"checkout.session","customer":null}}}`)}
	require.Empty(t, rules.OrderingKey(guest), "no customer: the tenant's sequence")
	require.True(t, rules.GlobalIDs(), "evt_… ids are unique across accounts")
}

// Stripe re-serializes an event on every delivery attempt: pending_webhooks
// and request change, key order is not promised. The identity is its
// immutable part.
func TestIdentityIgnoresWhatStripeChangesOnRetry(t *testing.T) {
	t.Parallel()
	id := func(body string) string {
		t.Helper()
		h, ok := rules.Identity([]byte(body))
		require.True(t, ok)
		return h
	}
	first := id(`{"id":"evt_1","object":"event","api_version":"2024-06-20","created":1733130000,"type":"invoice.paid","livemode":false,"pending_webhooks":2,"request":{"id":null,"idempotency_key":null},"data":{"object":{"id":"in_1","amount_paid":4200,"metadata":{"tenant_id":"acme"}}}}`)
	require.True(t, strings.HasPrefix(first, stripe.IdentityScheme+":"))
	require.Equal(t, first, id(`{"pending_webhooks":1,"data":{"object":{"metadata":{"tenant_id":"acme"},"amount_paid":4200,"id":"in_1"}},"type":"invoice.paid","created":1733130000,"api_version":"2024-06-20","id":"evt_1","object":"event","livemode":false,"request":{"id":"req_9","idempotency_key":"k"}}`),
		"a Stripe retry is the same event")
	require.NotEqual(t, first, id(`{"id":"evt_1","object":"event","api_version":"2024-06-20","created":1733130000,"type":"invoice.paid","pending_webhooks":1,"data":{"object":{"id":"in_1","amount_paid":1,"metadata":{"tenant_id":"acme"}}}}`),
		"a different body under the same id is a conflict")
	require.NotEqual(t, first, id(`{"id":"evt_1","object":"event","api_version":"2024-06-20","created":1733130000,"type":"invoice.paid","account":"acct_1","pending_webhooks":1,"data":{"object":{"id":"in_1","amount_paid":4200,"metadata":{"tenant_id":"acme"}}}}`),
		"the account is part of the identity")
	_, ok := rules.Identity([]byte(`[1]`))
	require.False(t, ok, "not a Stripe event: identified by content")
}

// Any body: never a panic, and a customer is always a usable subject.
func FuzzCustomer(f *testing.F) {
	for _, s := range []string{
		`{"data":{"object":{"id":"in_1","object":"invoice","customer":"cus_A"}}}`,
		`{"data":{"object":{"id":"cus_C","object":"customer"}}}`,
		`{"data":{"object":{"customer":{"id":"cus_B"}}}}`,
		`{"data":{"object":{"customer":null}}}`, `{"data":null}`, `[]`, `"x"`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got := stripe.Customer(body)
		if got != "" && (!envelope.ValidSubject(got) || !utf8.ValidString(got)) {
			t.Fatalf("%q: unusable customer %q", body, got)
		}
	})
}
