package jobkinds_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-mock/embedded"
	"github.com/stripe/stripe-mock/server"

	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	"github.com/siteswarm/eventplatform/internal/wire/jobsworkerfn"
)

func TestRoutedTypes(t *testing.T) {
	t.Parallel()
	withRoutes := func(patterns ...string) topology.Topology {
		top := topology.Default().Clone()
		top.Routes = nil
		for _, p := range patterns {
			top.Routes = append(top.Routes, topology.Route{Pattern: p, Topics: []string{topology.Billing}})
		}
		return top
	}
	noStripe := topology.Default().Clone()
	noStripe.Producers = nil
	for _, c := range []struct {
		name string
		top  topology.Topology
		want []string
	}{
		{"the default topology's routes", topology.Default(), []string{"checkout.session.*", "customer.subscription.*", "invoice.*"}},
		{"exact types, deduplicated and sorted", withRoutes("stripe.invoice.paid", "audit.*", "stripe.charge.refunded", "stripe.invoice.paid"), []string{"charge.refunded", "invoice.paid"}},
		{"every Stripe event routed: no filter", withRoutes("stripe.invoice.paid", "stripe.*"), nil},
		{"no Stripe producer", noStripe, nil},
	} {
		require.Equal(t, c.want, jobkinds.RoutedTypes(c.top, stripe.Source), c.name)
	}
}

// stripeMock serves stripe-mock's stub of the Stripe API (its embedded
// OpenAPI spec and fixtures, which it validates every request against)
// and records each GET /v1/events query and the status it got; eventTypes
// are the event names the spec knows (enabled_events of a webhook
// endpoint: the names Stripe's types parameter takes).
func stripeMock(t *testing.T) (baseURL string, calls func() []listCall, eventTypes []string) {
	t.Helper()
	sp, err := server.LoadSpec(embedded.OpenAPISpec, "")
	require.NoError(t, err)
	fx, err := server.LoadFixtures(embedded.OpenAPIFixtures, "")
	require.NoError(t, err)
	stub, err := server.NewStubServer(fx, sp, false, false)
	require.NoError(t, err)
	var (
		mu  sync.Mutex
		got []listCall
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		stub.HandleRequest(rec, r)
		if r.URL.Path == "/v1/events" {
			mu.Lock()
			got = append(got, listCall{query: r.URL.Query(), status: rec.Code, body: rec.Body.String()})
			mu.Unlock()
		}
		maps.Copy(w.Header(), rec.Header())
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(srv.Close)

	var doc struct {
		Paths map[string]map[string]struct {
			RequestBody struct {
				Content map[string]struct {
					Schema struct {
						Properties map[string]struct {
							Items struct {
								Enum []string `json:"enum"`
							} `json:"items"`
						} `json:"properties"`
					} `json:"schema"`
				} `json:"content"`
			} `json:"requestBody"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(embedded.OpenAPISpec, &doc))
	for _, name := range doc.Paths["/v1/webhook_endpoints"]["post"].RequestBody.Content["application/x-www-form-urlencoded"].Schema.Properties["enabled_events"].Items.Enum {
		if name != "*" {
			eventTypes = append(eventTypes, name)
		}
	}
	require.Greater(t, len(eventTypes), 100, "the spec's event names")
	return srv.URL, func() []listCall { mu.Lock(); defer mu.Unlock(); return slices.Clone(got) }, eventTypes
}

type listCall struct {
	query  url.Values
	status int
	body   string
}

// Reconciliation lists what the topology routes the way Stripe's List
// Events API documents its filters, checked against stripe-mock (whose
// OpenAPI spec validates each request) and that spec's event names:
// types carries exact names only (at most 20), type one name or one
// wildcard group, never both in a call; together the calls select every
// event type the routes take, and none twice. (The job sent
// types[]=invoice.* before: a wildcard Stripe's types does not take.)
func TestReconcileListsAsStripesEventsAPIDocuments(t *testing.T) {
	t.Parallel()
	base, calls, names := stripeMock(t)
	b := setup(t, map[string]string{
		jobsworkerfn.EnvStripeAPIBaseURL: base,
		jobsworkerfn.EnvStripeAPIKey:     "sk_test_123",
		jobsworkerfn.EnvStripeTenantMap:  `{"default":"acme"}`,
	})
	j := b.run(t, jobs.StartParams{Kind: jobkinds.KindReconcile, TenantID: "platform", Args: json.RawMessage(`{"date":"2026-12-01"}`)})
	require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)

	known := map[string]bool{}
	for _, n := range names {
		known[n] = true
	}
	selected := map[string]int{}
	got := calls()
	require.NotEmpty(t, got)
	for _, c := range got {
		require.Equal(t, http.StatusOK, c.status, "stripe-mock refused %v: %s", c.query, c.body)
		var types []string
		for k, vs := range c.query {
			if k == "types" || strings.HasPrefix(k, "types[") {
				types = append(types, vs...)
			}
		}
		one := c.query.Get("type")
		require.False(t, one != "" && len(types) > 0, "type or types, not both: %v", c.query)
		require.LessOrEqual(t, len(types), 20, "types takes at most 20")
		for _, ty := range types {
			require.True(t, known[ty], "types[] %q: not an event name Stripe knows (types takes exact names)", ty)
			selected[ty]++
		}
		if one != "" {
			require.LessOrEqual(t, strings.Count(one, "*"), 1, "type takes one wildcard: %q", one)
			n := 0
			for _, name := range names {
				if topology.Match(one, name) {
					selected[name]++
					n++
				}
			}
			require.NotZero(t, n, "type %q selects no event Stripe knows", one)
		}
		if c.query.Get("starting_after") == "" {
			require.Equal(t, "100", c.query.Get("limit"))
			require.NotEmpty(t, c.query.Get("created[gte]"))
		}
	}
	for _, name := range names {
		routed := len(topology.Default().Route("stripe."+name)) > 0
		if routed {
			require.Equal(t, 1, selected[name], "%s is routed: listed once", name)
		} else {
			require.Zero(t, selected[name], "%s is not routed: not listed", name)
		}
	}
}
