package cachepurge

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
//
// The headers are the API's word, but one answer must not stall every
// tenant's purges for a day (Ratelimit-Policy: q=1;w=86400 made the next
// call wait 24 h, and the pace never came back): a policy may slow the
// pace to at most one call per MaxPolicyInterval, a reset may hold calls
// for at most MaxResetHold, and a stricter policy the API stops repeating
// decays back to the configured rate (it holds for PolicyHalfLife after
// the last answer that said it, then halves every PolicyHalfLife).
type Pacer struct {
	mu   sync.Mutex
	base time.Duration // the configured interval between slots
	// policy is the interval the API's policy asked for (0: none), as of
	// policyAt; it decays (see paceInterval).
	policy   time.Duration
	policyAt time.Time
	next     time.Time // the next free slot
	now      func() time.Time
	sleep    func(ctx context.Context, d time.Duration) error

	// delayed counts calls that waited, waited their total wait.
	delayed int
	waited  time.Duration
}

// Bounds of what the API's rate-limit headers may do to the pace.
const (
	// MaxPolicyInterval is the slowest pace a policy can impose: one call
	// a minute (Cloudflare's strictest purge limit is 5 a minute).
	MaxPolicyInterval = time.Minute
	// MaxResetHold is the longest a "window used up" answer holds every
	// call: the purge retry policy's own cap (a job waits no longer).
	MaxResetHold = MaxDelay
	// PolicyHalfLife is how long a policy holds after the last answer that
	// said it, and how often it halves after that.
	PolicyHalfLife = time.Minute
)

// NewPacer paces at perSecond calls a second (<= 0: unpaced).
func NewPacer(perSecond float64, now func() time.Time) *Pacer {
	p := &Pacer{now: now, sleep: clock.Sleep}
	if perSecond > 0 {
		p.base = time.Duration(float64(time.Second) / perSecond)
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
	p.next = slot.Add(paceInterval(p.base, p.policy, now.Sub(p.policyAt)))
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

// Observe adapts the pace to what the API said about its rate limit,
// within the bounds above.
func (p *Pacer) Observe(rl RateLimit) {
	if !rl.Known {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if rl.Quota > 0 && rl.Window > 0 {
		// The latest policy replaces the one before (a looser one is news
		// too); it only ever slows the configured pace.
		p.policy, p.policyAt = min(rl.Window/time.Duration(rl.Quota), MaxPolicyInterval), now
	}
	if rl.Remaining <= 0 && rl.Reset > 0 {
		if until := now.Add(min(rl.Reset, MaxResetHold)); until.After(p.next) {
			p.next = until
		}
	}
}

// Interval is the pace now: the time between two slots.
func (p *Pacer) Interval() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return paceInterval(p.base, p.policy, p.now().Sub(p.policyAt))
}

// paceInterval is the interval between slots: the configured base, or a
// stricter policy seen age ago, which holds for PolicyHalfLife and then
// halves every PolicyHalfLife until the base is the stricter again.
func paceInterval(base, policy, age time.Duration) time.Duration {
	if policy <= base {
		return base
	}
	policy = min(policy, MaxPolicyInterval)
	if age > PolicyHalfLife {
		halvings := (age-PolicyHalfLife)/PolicyHalfLife + 1
		if halvings >= 32 {
			return base
		}
		policy >>= halvings
	}
	return max(base, policy)
}

// Stats returns the counters.
func (p *Pacer) Stats() (delayed int, waited time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.delayed, p.waited
}
