package cachepurge

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock is a pacer's clock whose sleeps only move it forward.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func fakePacer(perSecond float64) (*Pacer, *fakeClock) {
	c := &fakeClock{t: time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)}
	p := NewPacer(perSecond, c.now)
	p.sleep = func(_ context.Context, d time.Duration) error { c.advance(d); return nil }
	return p, c
}

// What one answer's headers can do to the pace is bounded, and a policy
// the API stops repeating decays back to the configured rate (issue 21 #8:
// one Ratelimit-Policy: q=1;w=86400 made the next call wait 24 h and the
// interval never came back down).
func TestPacerBoundsAndForgetsWhatTheHeadersSay(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		rate float64 // configured calls a second
		seen RateLimit
		// next bounds the waits of the two calls after the answer.
		next time.Duration
		// after is the interval once the policy is that long unrepeated.
		after    time.Duration
		interval time.Duration
	}{
		{name: "a day's policy is one call a minute", rate: 10, seen: RateLimit{Known: true, Remaining: 5, Quota: 1, Window: 24 * time.Hour},
			next: MaxPolicyInterval, after: 10 * time.Minute, interval: 100 * time.Millisecond},
		{name: "a day's reset holds calls for the retry cap", rate: 10, seen: RateLimit{Known: true, Remaining: 0, Reset: 24 * time.Hour},
			next: MaxResetHold, after: 0, interval: 100 * time.Millisecond},
		{name: "both at once", rate: 10, seen: RateLimit{Known: true, Remaining: 0, Reset: 24 * time.Hour, Quota: 1, Window: 24 * time.Hour},
			next: MaxResetHold, after: 10 * time.Minute, interval: 100 * time.Millisecond},
		{name: "a stricter policy slows the pace while it holds", rate: 10, seen: RateLimit{Known: true, Remaining: 5, Quota: 5, Window: time.Second},
			next: 200 * time.Millisecond, after: PolicyHalfLife - time.Second, interval: 200 * time.Millisecond},
		{name: "and halves once unrepeated", rate: 10, seen: RateLimit{Known: true, Remaining: 5, Quota: 1, Window: 4 * time.Second},
			next: 4 * time.Second, after: 2*PolicyHalfLife + time.Second, interval: time.Second},
		{name: "a looser policy never speeds up the configured pace", rate: 1, seen: RateLimit{Known: true, Remaining: 5, Quota: 1000, Window: time.Second},
			next: time.Second, after: 0, interval: time.Second},
		{name: "unpaced comes back to unpaced", rate: 0, seen: RateLimit{Known: true, Remaining: 5, Quota: 1, Window: time.Hour},
			next: MaxPolicyInterval, after: time.Hour, interval: 0},
		{name: "an unknown answer changes nothing", rate: 10, seen: RateLimit{Remaining: 0, Reset: time.Hour, Quota: 1, Window: time.Hour},
			next: 100 * time.Millisecond, after: 0, interval: 100 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p, clk := fakePacer(c.rate)
			_, err := p.Wait(ctx)
			require.NoError(t, err)
			p.Observe(c.seen)
			w1, err := p.Wait(ctx)
			require.NoError(t, err)
			w2, err := p.Wait(ctx)
			require.NoError(t, err)
			require.LessOrEqual(t, max(w1, w2), c.next, "the wait one answer can cause")
			require.GreaterOrEqual(t, min(w1, w2), time.Duration(0))
			clk.advance(c.after)
			require.Equal(t, c.interval, p.Interval())
		})
	}
}

// A policy the API keeps repeating keeps holding.
func TestPacerKeepsARepeatedPolicy(t *testing.T) {
	t.Parallel()
	p, clk := fakePacer(10)
	strict := RateLimit{Known: true, Remaining: 50, Quota: 5, Window: time.Minute} // one call every 12 s
	for range 30 {
		p.Observe(strict)
		clk.advance(30 * time.Second)
		require.Equal(t, 12*time.Second, p.Interval())
	}
	// Then a looser policy is news: it replaces the stricter at once.
	p.Observe(RateLimit{Known: true, Remaining: 50, Quota: 100, Window: time.Minute})
	require.Equal(t, 600*time.Millisecond, p.Interval())
}

func TestPaceInterval(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		base, policy, age, want time.Duration
	}{
		{base: time.Second, policy: 0, age: 0, want: time.Second},
		{base: time.Second, policy: 500 * time.Millisecond, age: 0, want: time.Second},
		{base: time.Second, policy: 8 * time.Second, age: 0, want: 8 * time.Second},
		{base: time.Second, policy: 8 * time.Second, age: PolicyHalfLife, want: 8 * time.Second},
		{base: time.Second, policy: 8 * time.Second, age: PolicyHalfLife + 1, want: 4 * time.Second},
		{base: time.Second, policy: 8 * time.Second, age: 2*PolicyHalfLife + 1, want: 2 * time.Second},
		{base: time.Second, policy: 8 * time.Second, age: 4*PolicyHalfLife + 1, want: time.Second},
		{base: 0, policy: time.Hour, age: 0, want: MaxPolicyInterval},
		{base: 0, policy: time.Hour, age: 100 * PolicyHalfLife, want: 0},
		{base: 0, policy: time.Hour, age: 1 << 62, want: 0},
		{base: time.Second, policy: 8 * time.Second, age: -time.Hour, want: 8 * time.Second},
	} {
		require.Equal(t, c.want, paceInterval(c.base, c.policy, c.age), "%+v", c)
	}
}
