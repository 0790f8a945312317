package devstack

import (
	"net/http"
	"strings"
	"time"
)

// accessLog logs each request to the stack (not the /healthz probes a
// script polls), so the terminal shows what arrived and what it got.
func (s *Stack) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			next.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		level := s.Log.Info
		if rec.status >= 500 && !strings.HasPrefix(r.URL.Path, SinkPath) {
			level = s.Log.Warn
		}
		level("http "+r.Method+" "+r.URL.Path, "function", "http", "status", rec.status, "ms", time.Since(start).Milliseconds())
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
