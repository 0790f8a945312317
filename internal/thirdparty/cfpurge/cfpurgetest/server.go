// Package cfpurgetest is a local stand-in for Cloudflare's purge endpoint,
// for tests: it checks what Cloudflare checks (bearer token, a known zone,
// a JSON body of at most 100 tags), records every call and answers as told
// (a status with Retry-After, a 200 with success:false, rate-limit
// headers).
package cfpurgetest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Call is one request the server received.
type Call struct {
	Zone string
	Tags []string
	At   time.Time
	// Status is what the server answered.
	Status int
}

// Answer is a scripted answer.
type Answer struct {
	Status     int
	RetryAfter string
	// SuccessFalse answers 200 with success:false and an error code.
	SuccessFalse bool
	Headers      map[string]string
}

// Server is the stand-in; create it with New.
type Server struct {
	*httptest.Server
	Token string
	// Zones are the zone ids it knows.
	Zones map[string]bool

	mu      sync.Mutex
	calls   []Call
	scripts map[string][]Answer // per zone ("" every zone), consumed in order
}

// New starts a server knowing zones, accepting token, closed with the
// test.
func New(t testing.TB, token string, zones ...string) *Server {
	s := &Server{Token: token, Zones: map[string]bool{}, scripts: map[string][]Answer{}}
	for _, z := range zones {
		s.Zones[z] = true
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// BaseURL is the API root to configure.
func (s *Server) BaseURL() string { return s.URL + "/client/v4" }

// Script queues answers for zone's next calls ("" for any zone).
func (s *Server) Script(zone string, answers ...Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scripts[zone] = append(s.scripts[zone], answers...)
}

// Calls returns the calls so far, in arrival order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/client/v4/zones/")
	zone, tail, _ := strings.Cut(rest, "/")
	switch {
	case !ok || tail != "purge_cache" || r.Method != http.MethodPost:
		s.answer(w, "", nil, http.StatusNotFound, 7000, "No route for that URI")
		return
	case r.Header.Get("Authorization") != "Bearer "+s.Token:
		s.answer(w, zone, nil, http.StatusForbidden, 10000, "Authentication error")
		return
	case !s.Zones[zone]:
		s.answer(w, zone, nil, http.StatusNotFound, 7003, "Could not route to /zones/"+zone+"/purge_cache, perhaps your object identifier is invalid?")
		return
	}
	var body struct {
		Tags []string `json:"tags"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || len(body.Tags) == 0 || len(body.Tags) > 100 || r.Header.Get("Content-Type") != "application/json" {
		s.answer(w, zone, body.Tags, http.StatusBadRequest, 1012, "Request must contain 1 to 100 tags as JSON")
		return
	}
	s.mu.Lock()
	var a *Answer
	for _, key := range []string{zone, ""} {
		if q := s.scripts[key]; len(q) > 0 {
			a, s.scripts[key] = &q[0], q[1:]
			break
		}
	}
	s.mu.Unlock()
	if a == nil {
		s.answer(w, zone, body.Tags, http.StatusOK, 0, "")
		return
	}
	for k, v := range a.Headers {
		w.Header().Set(k, v)
	}
	if a.RetryAfter != "" {
		w.Header().Set("Retry-After", a.RetryAfter)
	}
	switch {
	case a.SuccessFalse:
		s.answer(w, zone, body.Tags, http.StatusOK, 1134, "purge rejected")
	case a.Status != 0 && a.Status != http.StatusOK:
		s.answer(w, zone, body.Tags, a.Status, 971, http.StatusText(a.Status))
	default:
		s.answer(w, zone, body.Tags, http.StatusOK, 0, "")
	}
}

// answer records the call and writes Cloudflare's envelope (code 0: a
// success).
func (s *Server) answer(w http.ResponseWriter, zone string, tags []string, status, code int, msg string) {
	s.mu.Lock()
	s.calls = append(s.calls, Call{Zone: zone, Tags: tags, At: time.Now(), Status: status})
	s.mu.Unlock()
	out := map[string]any{"success": code == 0, "errors": []any{}, "messages": []any{}, "result": map[string]string{"id": zone}}
	if code != 0 {
		out["errors"] = []map[string]any{{"code": code, "message": msg}}
		out["result"] = nil
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(out)
}
