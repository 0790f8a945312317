package devstack

import (
	"net/http"
	"strings"
)

// StartingRetryAfter is the Retry-After, in seconds, of a request the
// stack answers while it starts (start-up takes seconds).
const StartingRetryAfter = "1"

// whileStarting serves the port from the moment it listens, but nothing of
// the platform before it is ready: until then every request — a webhook, the
// admin API, the console, a route not registered yet — is answered 503 with
// Retry-After and {"error":{"code":"starting",…}}, the platform's refusal
// shape, never a 404 that reads as a wrong URL or a 5xx from a function
// whose dependencies are still being registered. GET /healthz keeps its own
// answer (503 {"status":"starting"}, then 200), and the stack's stand-ins
// for AWS and third parties (/2015-03-31/…, /__…) are served as soon as
// they are mounted: start-up itself calls them.
func (s *Stack) whileStarting(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.ready.Load() || r.URL.Path == "/healthz" {
			next.ServeHTTP(w, r)
			return
		}
		if standIn(r.URL.Path) {
			if _, pattern := s.mux.Handler(r); pattern != "" {
				next.ServeHTTP(w, r)
				return
			}
		}
		w.Header().Set("Retry-After", StartingRetryAfter)
		writeJSON(w, http.StatusServiceUnavailable, map[string]map[string]string{"error": {
			"code":    "starting",
			"message": "the local stack is starting: retry in a second (GET /healthz answers 200 once it is ready)",
		}})
	})
}

// standIn reports whether path is one of the stack's stand-ins for AWS
// (Lambda's API) or a third party (the sink, S3, the purge and Stripe
// APIs, …), not a route of the platform.
func standIn(path string) bool {
	return strings.HasPrefix(path, "/2015-03-31/") || strings.HasPrefix(path, "/__")
}
