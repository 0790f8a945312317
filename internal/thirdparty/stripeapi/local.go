package stripeapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// LocalEvents is a local stand-in for Stripe's GET /v1/events: it lists
// the events added to it, newest first, with Stripe's pagination
// (limit, starting_after, has_more) and created[gte], behind a bearer key.
// The local stack serves it (with POST to add the events a missed webhook
// would have carried); tests run it on an httptest server.
type LocalEvents struct {
	Key string

	mu     sync.Mutex
	events []localEvent
}

type localEvent struct {
	id      string
	typ     string
	created int64
	raw     json.RawMessage
}

// typeMatches applies Stripe's filters: type, one name or one wildcard
// group ("invoice.*" matches "invoice.paid" and
// "invoice.payment.failed"); types, exact names.
func typeMatches(one string, types []string, typ string) bool {
	if one != "" {
		prefix, ok := strings.CutSuffix(one, ".*")
		return ok && strings.HasPrefix(typ, prefix+".") || one == typ
	}
	return len(types) == 0 || slices.Contains(types, typ)
}

// Add records an event (a Stripe event JSON object with id and created).
func (l *LocalEvents) Add(raw []byte) error {
	var head struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Created int64  `json:"created"`
	}
	if err := json.Unmarshal(raw, &head); err != nil || head.ID == "" || head.Type == "" || head.Created <= 0 {
		return errors.New("stripeapi: an event needs an id, a type and a created time")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = slices.DeleteFunc(l.events, func(e localEvent) bool { return e.id == head.ID })
	l.events = append(l.events, localEvent{id: head.ID, typ: head.Type, created: head.Created, raw: slices.Clone(raw)})
	slices.SortFunc(l.events, func(a, b localEvent) int {
		if a.created != b.created {
			return int(b.created - a.created)
		}
		return strings.Compare(b.id, a.id)
	})
	return nil
}

// Len is how many events it holds.
func (l *LocalEvents) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.events)
}

// ServeHTTP answers GET /v1/events.
func (l *LocalEvents) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, typ, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"type": typ, "message": msg}})
	}
	if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/v1/events") {
		fail(http.StatusNotFound, "invalid_request_error", "Unrecognized request URL")
		return
	}
	if l.Key != "" && r.Header.Get("Authorization") != "Bearer "+l.Key {
		fail(http.StatusUnauthorized, "invalid_request_error", "Invalid API Key provided")
		return
	}
	q := r.URL.Query()
	limit := 10
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			fail(http.StatusBadRequest, "invalid_request_error", "limit must be 1..100")
			return
		}
		limit = n
	}
	var from int64
	if v := q.Get("created[gte]"); v != "" {
		from, _ = strconv.ParseInt(v, 10, 64)
	}
	after := q.Get("starting_after")
	// stripe-go sends a list as types[0]=…&types[1]=…
	var types []string
	for k, vs := range q {
		if k == "types" || strings.HasPrefix(k, "types[") {
			for _, v := range vs {
				if v != "" {
					types = append(types, v)
				}
			}
		}
	}
	// As Stripe documents the two: types takes up to 20 exact names, type
	// one name or one wildcard group, and a call sends one of them.
	one := q.Get("type")
	switch {
	case one != "" && len(types) > 0:
		fail(http.StatusBadRequest, "invalid_request_error", "You may pass either type or types, but not both")
		return
	case len(types) > MaxTypes:
		fail(http.StatusBadRequest, "invalid_request_error", "types takes at most 20 event names")
		return
	case slices.ContainsFunc(types, func(t string) bool { return strings.Contains(t, "*") }):
		fail(http.StatusBadRequest, "invalid_request_error", "types takes exact event names; use type for a wildcard")
		return
	case strings.Count(one, "*") > 1 || strings.Contains(one, "*") && !strings.HasSuffix(one, ".*"):
		fail(http.StatusBadRequest, "invalid_request_error", "type takes one event name or one group ending in .*")
		return
	}
	l.mu.Lock()
	var page []json.RawMessage
	more := false
	started := after == ""
	for _, e := range l.events {
		if !started {
			started = e.id == after
			continue
		}
		if e.created < from || !typeMatches(one, types, e.typ) {
			continue
		}
		if len(page) == limit {
			more = true
			break
		}
		page = append(page, e.raw)
	}
	l.mu.Unlock()
	if page == nil {
		page = []json.RawMessage{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "url": "/v1/events", "has_more": more, "data": page})
}
