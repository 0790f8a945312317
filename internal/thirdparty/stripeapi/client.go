// Package stripeapi reads Stripe's events API (GET /v1/events) with
// stripe-go's backend, keeping each event's JSON exactly as Stripe sends it
// (the webhook adapter canonicalizes the same bytes), and serves a local
// stand-in of that endpoint (LocalEvents) for tests and the local stack.
//
// Adapter packages are named for the service they speak.
package stripeapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/form"
)

// DefaultBaseURL is Stripe's API.
const DefaultBaseURL = "https://api.stripe.com"

// MaxTypes is how many type filters one list call may carry.
const MaxTypes = 20

// Keys are the active API keys (a cached secret); the first is used.
type Keys interface {
	Active(ctx context.Context) []string
}

// Client lists events.
type Client struct {
	backend stripe.Backend
	keys    Keys
}

// NewClient builds a client for baseURL ("" for Stripe's) with stripe-go's
// own retries off: retry timing belongs to the job that pages.
func NewClient(baseURL string, keys Keys, hc *http.Client) *Client {
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	cfg := &stripe.BackendConfig{URL: stripe.String(baseURL), MaxNetworkRetries: stripe.Int64(0), LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull}}
	if hc != nil {
		cfg.HTTPClient = hc
	}
	return &Client{backend: stripe.GetBackendWithConfig(stripe.APIBackend, cfg), keys: keys}
}

// ListParams page events created at or after CreatedFrom, newest first,
// after StartingAfter.
type ListParams struct {
	CreatedFrom   time.Time
	StartingAfter string
	Limit         int
	// Type filters by one event type or one wildcard group ("invoice.*");
	// Types by exact event names (at most MaxTypes, no wildcard). Stripe
	// takes one or the other, never both; neither lists every type.
	Type  string
	Types []string
}

// Page is one page of events, each as Stripe sent it.
type Page struct {
	Events  []json.RawMessage
	HasMore bool
}

type rawList struct {
	stripe.APIResource
	Data    []json.RawMessage `json:"data"`
	HasMore bool              `json:"has_more"`
}

// ListEvents reads one page.
func (c *Client) ListEvents(ctx context.Context, p ListParams) (Page, error) {
	keys := c.keys.Active(ctx)
	if len(keys) == 0 {
		return Page{}, errors.New("stripeapi: no API key")
	}
	params := &stripe.EventListParams{ListParams: stripe.ListParams{Limit: stripe.Int64(int64(max(1, min(p.Limit, 100)))), Single: true}}
	params.Context = ctx
	if p.StartingAfter != "" {
		params.StartingAfter = stripe.String(p.StartingAfter)
	}
	if !p.CreatedFrom.IsZero() {
		params.CreatedRange = &stripe.RangeQueryParams{GreaterThanOrEqual: p.CreatedFrom.Unix()}
	}
	switch {
	case len(p.Types) > MaxTypes:
		return Page{}, fmt.Errorf("stripeapi: %d types: Stripe filters at most %d", len(p.Types), MaxTypes)
	case p.Type != "" && len(p.Types) > 0:
		return Page{}, errors.New("stripeapi: type and types: Stripe takes one or the other")
	case slices.ContainsFunc(p.Types, func(t string) bool { return strings.Contains(t, "*") }):
		return Page{}, fmt.Errorf("stripeapi: types %q: Stripe's types takes exact event names; a wildcard goes in type, one a call", p.Types)
	}
	if p.Type != "" {
		params.Type = stripe.String(p.Type)
	}
	if len(p.Types) > 0 { // an empty list would be sent as types= (match nothing)
		params.Types = stripe.StringSlice(p.Types)
	}
	var out rawList
	// CallRaw with the form encoded here, as stripe-go's list iterators
	// do: Call's parameter check reflects on a Metadata field that
	// EventListParams lacks, and panics.
	values := &form.Values{}
	form.AppendTo(values, params)
	if err := c.backend.CallRaw(http.MethodGet, "/v1/events", keys[0], values, params.GetParams(), &out); err != nil {
		var se *stripe.Error
		if errors.As(err, &se) {
			return Page{}, &APIError{Status: se.HTTPStatusCode, Message: se.Msg}
		}
		return Page{}, fmt.Errorf("stripeapi: list events: %w", err)
	}
	return Page{Events: out.Data, HasMore: out.HasMore}, nil
}

// APIError is Stripe's refusal of a call.
type APIError struct {
	Status  int
	Message string
}

func (e *APIError) Error() string { return fmt.Sprintf("stripe answered %d: %s", e.Status, e.Message) }

// Retryable reports whether a retry may help (429 and 5xx).
func (e *APIError) Retryable() bool { return e.Status == http.StatusTooManyRequests || e.Status >= 500 }
