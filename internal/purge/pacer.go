package purge

import (
	"context"
	"sync"
	"time"

	"github.com/siteswarm/eventplatform/internal/kit/clock"
)

// Pacer spaces purge API calls. The API's rate limit is per account, shared
// by every tenant, so one tenant's burst must not use it all: calls take
// evenly spaced slots in the order they ask (first come, first served), and
// a tenant's chunks are sent one after the other, so tenants with work
// interleave instead of one waiting for another's whole backlog. The rate
// is the configured one, lowered to the API's policy (RateLimit-Policy)
// when that is stricter, and the pacer holds every call when the API says
// the window is used up (RateLimit remaining 0) until it resets. Safe for
// concurrent use.
type Pacer struct {
	mu       sync.Mutex
	interval time.Duration // between slots
	next     time.Time     // the next free slot
	now      func() time.Time
	sleep    func(ctx context.Context, d time.Duration) error

	// delayed counts calls that waited, waited their total wait.
	delayed int
	waited  time.Duration
}

// NewPacer paces at perSecond calls a second (<= 0: unpaced).
func NewPacer(perSecond float64, now func() time.Time) *Pacer {
	p := &Pacer{now: now, sleep: clock.Sleep}
	if perSecond > 0 {
		p.interval = time.Duration(float64(time.Second) / perSecond)
	}
	return p
}

// Wait blocks until the caller's slot; it returns how long it waited.
func (p *Pacer) Wait(ctx context.Context) (time.Duration, error) {
	p.mu.Lock()
	now := p.now()
	slot := now
	if p.next.After(slot) {
		slot = p.next
	}
	p.next = slot.Add(p.interval)
	wait := slot.Sub(now)
	if wait > 0 {
		p.delayed++
		p.waited += wait
	}
	p.mu.Unlock()
	if wait <= 0 {
		return 0, nil
	}
	return wait, p.sleep(ctx, wait)
}

// Observe adapts the pace to what the API said about its rate limit.
func (p *Pacer) Observe(rl RateLimit) {
	if !rl.Known {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if rl.Quota > 0 && rl.Window > 0 {
		if policy := rl.Window / time.Duration(rl.Quota); policy > p.interval {
			p.interval = policy
		}
	}
	if rl.Remaining <= 0 && rl.Reset > 0 {
		if until := p.now().Add(rl.Reset); until.After(p.next) {
			p.next = until
		}
	}
}

// Stats returns the counters.
func (p *Pacer) Stats() (delayed int, waited time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.delayed, p.waited
}
