package topology

import (
	"errors"
	"fmt"
	"time"
)

// Breaker is a topic's subscriber-health policy (internal/subscriberhealth): when its
// breaker opens, how it probes, how it drains and when it escalates. Zero
// fields take the defaults (Breaker.WithDefaults).
type Breaker struct {
	// Off leaves the topic without a breaker: failures go the way they
	// always did (backoff, then the DLQ).
	Off bool
	// TripAfter is how many consecutive transient subscriber failures
	// (5xx, 429, timeouts, connection errors), counted across every
	// consumer instance, open the breaker. Permanent (4xx) failures and
	// successes end a streak.
	TripAfter int
	// ProbeAfter is the wait before the first probe of an outage; each
	// failed probe doubles it, up to ProbeMax.
	ProbeAfter time.Duration
	ProbeMax   time.Duration
	// ProbeConcurrency is the event source mapping's maximum concurrency
	// while half open, and where the drain's ramp starts (2 is Lambda's
	// minimum).
	ProbeConcurrency int
	// ProbeWindow is how long a half-open topic must go without a failure
	// before the health monitor closes it (a consumer that sees a probe
	// succeed closes it at once).
	ProbeWindow time.Duration
	// RampEvery is how often a draining topic's concurrency doubles, from
	// ProbeConcurrency up to the topic's own.
	RampEvery time.Duration
	// Quiet is how long a recovered topic must stay closed before its
	// outage is over (subscriber_recovered sent, the probe backoff reset):
	// a subscriber that fails again within it reopens the same outage,
	// with no new alert — a flapping subscriber raises one pair of alerts.
	Quiet time.Duration
	// EscalateAfter is how long an outage may last before
	// subscriber_escalated (and the open-too-long alarm): well before the
	// queue's retention could expire a held message.
	EscalateAfter time.Duration
}

// Defaults of Breaker.
const (
	DefaultTripAfter  = 10
	DefaultProbeAfter = 30 * time.Second
	// DefaultProbeMax keeps a long outage's probes 2 minutes apart: a
	// recovered subscriber gets its backlog within about 2 minutes, and a
	// probe costs one batch of held deliveries (30 an hour).
	DefaultProbeMax         = 2 * time.Minute
	DefaultProbeConcurrency = 2
	DefaultProbeWindow      = 20 * time.Second
	DefaultRampEvery        = 20 * time.Second
	DefaultQuiet            = 2 * time.Minute
	DefaultEscalateAfter    = time.Hour
)

// QueueRetention is how long a topic queue keeps a message (SQS's maximum,
// 14 days): what a breaker can hold through. EscalateAfter must be well
// inside it.
const QueueRetention = 14 * 24 * time.Hour

// WithDefaults fills unset fields.
func (b Breaker) WithDefaults() Breaker {
	if b.TripAfter == 0 {
		b.TripAfter = DefaultTripAfter
	}
	if b.ProbeAfter == 0 {
		b.ProbeAfter = DefaultProbeAfter
	}
	if b.ProbeMax == 0 {
		b.ProbeMax = max(DefaultProbeMax, b.ProbeAfter)
	}
	if b.ProbeConcurrency == 0 {
		b.ProbeConcurrency = DefaultProbeConcurrency
	}
	if b.ProbeWindow == 0 {
		b.ProbeWindow = DefaultProbeWindow
	}
	if b.RampEvery == 0 {
		b.RampEvery = DefaultRampEvery
	}
	if b.Quiet == 0 {
		b.Quiet = DefaultQuiet
	}
	if b.EscalateAfter == 0 {
		b.EscalateAfter = DefaultEscalateAfter
	}
	return b
}

// Validate checks a policy (after WithDefaults).
func (b Breaker) Validate() error {
	if b.Off {
		return nil
	}
	var errs []error
	if b.TripAfter < 1 || b.TripAfter > 10000 {
		errs = append(errs, fmt.Errorf("trip after %d failures out of range (1..10000)", b.TripAfter))
	}
	if b.ProbeAfter < time.Second || b.ProbeMax < b.ProbeAfter || b.ProbeMax > 12*time.Hour {
		errs = append(errs, fmt.Errorf("probe after %s doubling to %s: need 1s <= after <= max <= 12h", b.ProbeAfter, b.ProbeMax))
	}
	if b.ProbeConcurrency < 2 || b.ProbeConcurrency > 1000 {
		errs = append(errs, fmt.Errorf("probe concurrency %d out of range (2..1000, Lambda's event source mapping limits)", b.ProbeConcurrency))
	}
	if b.ProbeWindow < time.Second || b.RampEvery < time.Second || b.Quiet < 0 {
		errs = append(errs, errors.New("probe window and ramp step must be at least 1s and quiet not negative"))
	}
	if b.EscalateAfter < time.Minute || b.EscalateAfter > QueueRetention/2 {
		errs = append(errs, fmt.Errorf("escalate after %s out of range (1m..7d: well inside the queue's 14-day retention)", b.EscalateAfter))
	}
	return errors.Join(errs...)
}

// ProbeDelay is the wait before the probe after level failed probes of an
// outage: ProbeAfter doubled level times, at most ProbeMax.
func (b Breaker) ProbeDelay(level int) time.Duration {
	d := b.ProbeAfter
	for i := 0; i < level && d < b.ProbeMax; i++ {
		d *= 2
	}
	return min(d, b.ProbeMax)
}

// NormalConcurrency is the topic's event source mapping concurrency when
// its breaker is closed and drained: MaxConcurrency, or Lambda's ceiling
// for an unbounded topic.
func (tp Topic) NormalConcurrency() int {
	if tp.MaxConcurrency > 0 {
		return tp.MaxConcurrency
	}
	return 1000
}
