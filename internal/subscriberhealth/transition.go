package subscriberhealth

import (
	"fmt"
	"time"

	"github.com/siteswarm/eventplatform/internal/topology"
)

// The breaker's transitions, as pure functions of a record, the topic's
// policy and the time. Each returns the next record and whether anything
// changed; callers Swap it in.

// trip opens a closed topic whose streak reached the policy's TripAfter.
func trip(h Health, p topology.Breaker, now time.Time) (Health, bool) {
	if h.State != Closed || h.Streak < p.TripAfter {
		return h, false
	}
	if h.OutageSince.IsZero() {
		h.OutageSince, h.Level, h.Announced, h.Escalated, h.Backlog = now, 0, false, false, 0
	} else {
		// A relapse within the quiet period: the same outage, probed
		// later than the last time.
		h.Level++
	}
	h.State, h.Since = Open, now
	h.Reason = fmt.Sprintf("%d consecutive transient failures", h.Streak)
	h.ProbeAt = now.Add(p.ProbeDelay(h.Level))
	h.Streak, h.Concurrency = 0, 0
	return h, true
}

// reopen sends a half-open topic whose probe failed back to open, probed
// after the next, longer backoff.
func reopen(h Health, p topology.Breaker, now time.Time) (Health, bool) {
	if h.State != HalfOpen {
		return h, false
	}
	h.Level++
	h.State, h.Since, h.Reason = Open, now, "probe failed"
	h.ProbeAt = now.Add(p.ProbeDelay(h.Level))
	h.Streak = 0
	return h, true
}

// probe moves an open topic whose backoff ran out to half open.
func probe(h Health, now time.Time) (Health, bool) {
	if h.State != Open || now.Before(h.ProbeAt) {
		return h, false
	}
	h.State, h.Since, h.Reason = HalfOpen, now, "probing"
	h.ProbeAt, h.Streak = time.Time{}, 0
	return h, true
}

// recover closes a half-open topic: its drain starts at the probe
// concurrency. backlog is the queue depth then (-1: unknown); the record
// keeps the most it saw.
func recoverTopic(h Health, p topology.Breaker, now time.Time, why string, backlog int) (Health, bool) {
	if h.State != HalfOpen {
		return h, false
	}
	h.State, h.Since, h.Reason = Closed, now, why
	h.Streak, h.Concurrency, h.RecoveredAt, h.RampedAt = 0, p.ProbeConcurrency, now, now
	h.Backlog = max(h.Backlog, backlog, 0)
	return h, true
}

// ramp doubles a draining topic's concurrency once RampEvery has passed
// since the last step; at the topic's own it stops (0).
func ramp(h Health, p topology.Breaker, normal int, now time.Time) (Health, bool) {
	if h.State != Closed || h.Concurrency == 0 || now.Sub(h.RampedAt) < p.RampEvery {
		return h, false
	}
	h.RampedAt = now
	h.Concurrency *= 2
	if h.Concurrency >= normal {
		h.Concurrency = 0
	}
	return h, true
}

// settle ends an outage whose topic stayed closed through the quiet
// period after its drain reached full concurrency.
func settle(h Health, p topology.Breaker, now time.Time) (Health, bool) {
	if h.State != Closed || h.OutageSince.IsZero() || h.Concurrency != 0 || now.Sub(h.Since) < p.Quiet {
		return h, false
	}
	h.OutageSince, h.Level, h.Announced, h.Escalated = time.Time{}, 0, false, false
	h.Reason = "recovered"
	return h, true
}

// pause is an operator's: any state to paused.
func pause(h Health, now time.Time, who, why string) (Health, bool) {
	if h.State == Paused {
		return h, false
	}
	h.State, h.Since = Paused, now
	h.Reason = "paused by " + who
	if why != "" {
		h.Reason += ": " + why
	}
	h.ProbeAt, h.Streak, h.Concurrency = time.Time{}, 0, 0
	return h, true
}

// resume is an operator's: paused to closed, drained at a ramp like a
// recovery (the queue may hold a backlog).
func resume(h Health, p topology.Breaker, now time.Time, who string) (Health, bool) {
	if h.State != Paused {
		return h, false
	}
	h.State, h.Since, h.Reason = Closed, now, "resumed by "+who
	h.Streak, h.Concurrency, h.RampedAt = 0, p.ProbeConcurrency, now
	return h, true
}

// desired is the event source mapping a state asks for.
func desired(h Health, tp topology.Topic) Mapping {
	switch h.State {
	case Open, Paused:
		return Mapping{Enabled: false}
	case HalfOpen:
		return Mapping{Enabled: true, MaxConcurrency: tp.Breaker.WithDefaults().ProbeConcurrency}
	}
	if h.Concurrency > 0 {
		return Mapping{Enabled: true, MaxConcurrency: h.Concurrency}
	}
	return Mapping{Enabled: true, MaxConcurrency: tp.NormalConcurrency()}
}
