package stripeapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/thirdparty/stripeapi"
)

type keys []string

func (k keys) Active(context.Context) []string { return k }

func setup(t *testing.T) (*stripeapi.LocalEvents, string) {
	t.Helper()
	l := &stripeapi.LocalEvents{Key: "sk_test_1"}
	srv := httptest.NewServer(l)
	t.Cleanup(srv.Close)
	return l, srv.URL
}

func ids(t *testing.T, p stripeapi.Page) []string {
	t.Helper()
	var out []string
	for _, raw := range p.Events {
		var e struct{ ID string }
		require.NoError(t, json.Unmarshal(raw, &e))
		out = append(out, e.ID)
	}
	return out
}

// The client pages the events API as stripe-go encodes it (limit,
// starting_after, created[gte], type, types[]), newest first, and keeps
// each event's bytes as served.
func TestClientPagesFiltersAndKeepsBytes(t *testing.T) {
	t.Parallel()
	l, url := setup(t)
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		typ := "invoice.paid"
		if i == 2 {
			typ = "customer.created"
		}
		require.NoError(t, l.Add(fmt.Appendf(nil, `{"id":"evt_%d","type":%q,"created":%d,  "extra":"kept as sent"}`, i, typ, t0.Add(time.Duration(i)*time.Hour).Unix())))
	}
	require.Error(t, l.Add([]byte(`{"id":"evt_x"}`)), "no type, no created")
	c := stripeapi.NewClient(url, keys{"sk_test_1"}, nil)
	ctx := context.Background()

	p, err := c.ListEvents(ctx, stripeapi.ListParams{Limit: 2, Type: "invoice.*"})
	require.NoError(t, err)
	require.Equal(t, []string{"evt_4", "evt_3"}, ids(t, p))
	require.True(t, p.HasMore)
	require.Contains(t, string(p.Events[0]), `"extra":"kept as sent"`, "fields the SDK does not model are kept")

	p, err = c.ListEvents(ctx, stripeapi.ListParams{Limit: 2, Type: "invoice.*", StartingAfter: "evt_3"})
	require.NoError(t, err)
	require.Equal(t, []string{"evt_1", "evt_0"}, ids(t, p), "customer.created is filtered out")
	require.False(t, p.HasMore)

	p, err = c.ListEvents(ctx, stripeapi.ListParams{Limit: 10, CreatedFrom: t0.Add(3 * time.Hour)})
	require.NoError(t, err)
	require.Equal(t, []string{"evt_4", "evt_3"}, ids(t, p))

	p, err = c.ListEvents(ctx, stripeapi.ListParams{Limit: 10, Types: []string{"customer.created", "invoice.paid"}})
	require.NoError(t, err)
	require.Equal(t, []string{"evt_4", "evt_3", "evt_2", "evt_1", "evt_0"}, ids(t, p), "types: exact names")

	_, err = c.ListEvents(ctx, stripeapi.ListParams{Types: make([]string, stripeapi.MaxTypes+1)})
	require.ErrorContains(t, err, "at most 20")
	_, err = c.ListEvents(ctx, stripeapi.ListParams{Types: []string{"invoice.*"}})
	require.ErrorContains(t, err, "exact event names", "a wildcard goes in type")
	_, err = c.ListEvents(ctx, stripeapi.ListParams{Type: "invoice.*", Types: []string{"customer.created"}})
	require.ErrorContains(t, err, "one or the other")
}

// The local stand-in takes the filters as Stripe documents them: it
// refuses a wildcard in types, type and types together, and a type with
// more than one wildcard, as a 400.
func TestLocalEventsRefusesWhatStripeDoesNotDocument(t *testing.T) {
	t.Parallel()
	_, base := setup(t)
	for _, q := range []string{"types[0]=invoice.*", "type=invoice.*&types[0]=invoice.paid", "type=*.paid", "type=invoice.*.*"} {
		req, err := http.NewRequest(http.MethodGet, base+"/v1/events?"+q, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer sk_test_1")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, q)
	}
}

// A refused key is a non-retryable APIError; no key at all is an error
// before any call.
func TestClientRefusals(t *testing.T) {
	t.Parallel()
	_, url := setup(t)
	_, err := stripeapi.NewClient(url, keys{"sk_wrong"}, nil).ListEvents(context.Background(), stripeapi.ListParams{})
	var apiErr *stripeapi.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusUnauthorized, apiErr.Status)
	require.False(t, apiErr.Retryable())
	require.True(t, (&stripeapi.APIError{Status: 429}).Retryable())
	require.True(t, (&stripeapi.APIError{Status: 503}).Retryable())

	_, err = stripeapi.NewClient(url, keys{}, nil).ListEvents(context.Background(), stripeapi.ListParams{})
	require.ErrorContains(t, err, "no API key")
}
