package consume

import (
	"math/rand/v2"
	"time"
)

// Backoff computes how long a transiently failed message stays invisible:
// min(Cap, Base·2^(receiveCount-1)), less up to Jitter of it at random so
// a burst of failures does not come back in lockstep.
type Backoff struct {
	// Base is the delay after the first receive (default 5 s, the spec's
	// 2^attempt·5 s).
	Base time.Duration
	// Cap bounds every delay, retry-after included (default 15 min).
	Cap time.Duration
	// Jitter is the fraction (0..1) the delay may be shortened by at
	// random. Negative means none; 0 is the default 0.2.
	Jitter float64
	// Rand returns a number in [0, 1) (default math/rand/v2).
	Rand func() float64
}

// Defaults of Backoff.
const (
	DefaultBackoffBase = 5 * time.Second
	DefaultBackoffCap  = 15 * time.Minute
	defaultJitter      = 0.2
	// maxVisibility is SQS's visibility timeout limit.
	maxVisibility = 12 * time.Hour
)

func (b Backoff) base() time.Duration {
	if b.Base > 0 {
		return b.Base
	}
	return DefaultBackoffBase
}

func (b Backoff) limit() time.Duration {
	c := b.Cap
	if c <= 0 {
		c = DefaultBackoffCap
	}
	return min(c, maxVisibility)
}

// Delay is the visibility delay after the receiveCount-th receive failed.
// A positive retryAfter replaces the exponential delay (no jitter: the
// other side asked for that time), capped.
func (b Backoff) Delay(receiveCount int, retryAfter time.Duration) time.Duration {
	limit := b.limit()
	if retryAfter > 0 {
		return min(retryAfter, limit)
	}
	d := b.base()
	for i := 1; i < receiveCount && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	j := b.Jitter
	switch {
	case j < 0:
		j = 0
	case j == 0:
		j = defaultJitter
	case j > 1:
		j = 1
	}
	if j > 0 {
		r := rand.Float64
		if b.Rand != nil {
			r = b.Rand
		}
		d -= time.Duration(float64(d) * j * r())
	}
	return d
}
