package subject_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/subject"
	"github.com/siteswarm/eventplatform/internal/topology"
)

func TestStripeCustomer(t *testing.T) {
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
		require.Equal(t, tc.want, subject.StripeCustomer([]byte(tc.body)), name)
	}
}

// The committed Stripe samples: every routed billing event names its
// customer.
func TestStripeCustomerOfTheSamples(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		"checkout.session.completed.json":    "cus_QsT0oP4rNm6uVx",
		"customer.created.json":              "cus_QtU1pQ5sOn7vWy",
		"customer.subscription.updated.json": "cus_QrS9nO3qMl5tUw",
		"invoice.paid.json":                  "cus_QqR8mN2pLk4sTv",
	}
	for file, customer := range want {
		body, err := os.ReadFile(filepath.Join("..", "..", "events", "stripe", file))
		require.NoError(t, err)
		require.Equal(t, customer, subject.StripeCustomer(body), file)
	}
}

func TestOrderingKey(t *testing.T) {
	t.Parallel()
	stripe := topology.Producer{Source: "stripe", Provider: topology.ProviderStripe}
	cms := topology.Producer{Source: "cms"}
	invoice := envelope.Event{Source: "stripe", Subject: "in_1", Payload: []byte(`{"data":{"object":{"id":"in_1","object":"invoice","customer":"cus_A"}}}`)}
	require.Equal(t, "cus_A", subject.OrderingKey(stripe, invoice), "a Stripe event orders by its customer, not its object")
	guest := envelope.Event{Source: "stripe", Subject: "cs_1", Payload: []byte(`{"data":{"object":{"id":"cs_1","object":"checkout.session","customer":null}}}`)}
	require.Empty(t, subject.OrderingKey(stripe, guest), "no customer: the tenant's sequence")
	require.Equal(t, "page-7", subject.OrderingKey(cms, envelope.Event{Subject: "page-7", Payload: []byte(`{"customer":"cus_A"}`)}), "an internal producer's subject")
	require.Empty(t, subject.OrderingKey(cms, envelope.Event{Payload: []byte(`{}`)}))
}

// Any body: never a panic, and a key is always a usable subject.
func FuzzStripeCustomer(f *testing.F) {
	for _, s := range []string{
		`{"data":{"object":{"id":"in_1","object":"invoice","customer":"cus_A"}}}`,
		`{"data":{"object":{"id":"cus_C","object":"customer"}}}`,
		`{"data":{"object":{"customer":{"id":"cus_B"}}}}`,
		`{"data":{"object":{"customer":null}}}`, `{"data":null}`, `[]`, `"x"`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got := subject.StripeCustomer(body)
		if got != "" && (!envelope.ValidSubject(got) || !utf8.ValidString(got)) {
			t.Fatalf("%q: unusable customer %q", body, got)
		}
	})
}

// An event's subject identifiers: the envelope subject, and for a Stripe
// event its customer when that is another entity.
func TestNamesOfAnEvent(t *testing.T) {
	t.Parallel()
	invoice := envelope.Event{Source: "stripe", Subject: "in_1", Payload: []byte(`{"data":{"object":{"id":"in_1","object":"invoice","customer":"cus_A"}}}`)}
	customer := envelope.Event{Source: "stripe", Subject: "cus_A", Payload: []byte(`{"data":{"object":{"id":"cus_A","object":"customer"}}}`)}
	internal := envelope.Event{Source: "storefront", Subject: "user-42", Payload: []byte(`{"data":{"object":{"customer":"cus_A"}}}`)}
	for name, tc := range map[string]struct {
		ev   envelope.Event
		want subject.Names
	}{
		"stripe invoice":           {invoice, subject.Names{Subject: "in_1", Owner: "cus_A"}},
		"stripe customer":          {customer, subject.Names{Subject: "cus_A"}},
		"internal producer":        {internal, subject.Names{Subject: "user-42"}},
		"claim-checked (no bytes)": {envelope.Event{Source: "stripe", Subject: "in_2"}, subject.Names{Subject: "in_2"}},
		"no subject":               {envelope.Event{Source: "storefront"}, subject.Names{}},
	} {
		got := subject.Of(tc.ev)
		require.Equal(t, tc.want, got, name)
		require.Equal(t, tc.want.Subject != "", got.Has(tc.want.Subject), name)
	}
	require.True(t, subject.Of(invoice).Has("cus_A"))
	require.False(t, subject.Of(invoice).Has(""))
}
