package cachepurge

import (
	"context"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/siteswarm/eventplatform/internal/kit/clock"
)

// LocalAPI is local mode's purge API (spec 001 §8: no CDN token): every call
// is recorded instead of sent, and it can be told to fail the way the real
// API does, so retries, backoff and dead letters can be watched locally.
// Safe for concurrent use.
type LocalAPI struct {
	Now func() time.Time

	mu      sync.Mutex
	purges  []Recorded
	failure *LocalFailure
	calls   int // calls since the failure was set
	failed  int // calls failed since the failure was set
}

// Recorded is one call local mode received.
type Recorded struct {
	TenantID string    `json:"tenantId"`
	Zone     string    `json:"zone"`
	Tags     []string  `json:"tags"`
	JobIDs   []string  `json:"jobIds"`
	At       time.Time `json:"at"`
}

// LocalFailure is how the local API answers while failing.
type LocalFailure struct {
	Status     int `json:"status"`
	RetryAfter int `json:"retryAfter,omitempty"`
	// Rate is the fraction of calls that fail (0 < Rate < 1: each call at
	// random, as a flaky API does); 0 fails every call.
	Rate float64 `json:"rate,omitempty"`
	// First fails the first First calls whatever Rate says, so a run with
	// few calls (tier-2 grouping makes them few) still sees a failure.
	First int `json:"first,omitempty"`
}

// maxRecorded bounds what local mode keeps; the oldest go first.
const maxRecorded = 1000

var _ API = (*LocalAPI)(nil)

// Purge records the call (or fails it).
func (l *LocalAPI) Purge(_ context.Context, c Call) (Response, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f := l.failure; f != nil {
		l.calls++
		if l.calls <= f.First || f.Rate <= 0 || f.Rate >= 1 || rand.Float64() < f.Rate {
			l.failed++
			return Response{}, &APIError{Status: f.Status, Message: http.StatusText(f.Status) + " (local mode, told to fail)", RetryAfter: time.Duration(f.RetryAfter) * time.Second}
		}
	}
	l.purges = append(l.purges, Recorded{TenantID: c.TenantID, Zone: c.Zone, Tags: slices.Clone(c.Tags), JobIDs: slices.Clone(c.JobIDs), At: clock.Or(l.Now)().UTC()})
	if n := len(l.purges); n > maxRecorded {
		l.purges = slices.Clone(l.purges[n-maxRecorded:])
	}
	return Response{}, nil
}

// Purges returns the recorded calls, oldest first.
func (l *LocalAPI) Purges() []Recorded {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.purges)
}

// Clear forgets the recorded calls.
func (l *LocalAPI) Clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.purges = nil
}

// Fail makes every call fail with f (nil: recover).
func (l *LocalAPI) Fail(f *LocalFailure) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failure = f
	l.calls, l.failed = 0, 0
}

// FailedCalls is how many calls failed since the last Fail.
func (l *LocalAPI) FailedCalls() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

// Failing returns the current failure (nil when calls succeed).
func (l *LocalAPI) Failing() *LocalFailure {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failure
}
