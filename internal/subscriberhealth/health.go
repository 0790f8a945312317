package subscriberhealth

import (
	"errors"
	"time"
)

// State is a topic breaker's state.
type State string

const (
	Closed   State = "closed"
	Open     State = "open"
	HalfOpen State = "half_open"
	Paused   State = "paused"
)

// Valid reports whether s is a known state.
func (s State) Valid() bool {
	switch s {
	case Closed, Open, HalfOpen, Paused:
		return true
	}
	return false
}

// Health is one topic's breaker record.
type Health struct {
	Topic string
	State State
	// Since is when State began.
	Since time.Time
	// Reason says why the topic is in State ("10 consecutive failures",
	// "probe failed", "paused by ops: maintenance", …).
	Reason string
	// LastError is the last subscriber failure the consumers recorded.
	LastError string
	// FailedAt is when it was recorded.
	FailedAt time.Time
	// ProbeAt is when an open topic is probed next.
	ProbeAt time.Time
	// Streak counts consecutive transient failures (closed, half open).
	Streak int
	// Level counts the failed probes of the current outage (the probe
	// backoff's exponent).
	Level int
	// OutageSince is when the current outage began (its first trip); zero
	// when there is none. It outlives a recovery by the policy's quiet
	// period, so a relapse reopens the same outage.
	OutageSince time.Time
	// Announced: subscriber_unhealthy went out for this outage.
	Announced bool
	// Escalated: subscriber_escalated went out for this outage.
	Escalated bool
	// Concurrency is the mapping concurrency of a draining (closed) topic;
	// 0 when it runs at the topic's own.
	Concurrency int
	// RampedAt is when the drain's concurrency last doubled.
	RampedAt time.Time
	// Backlog is how many messages waited in the queue when the outage
	// ended (reported by subscriber_recovered).
	Backlog int
	// RecoveredAt is when the outage's last probe succeeded.
	RecoveredAt time.Time
	// Version counts the record's writes; every replacement is conditional
	// on it (0: no record yet).
	Version int64
}

// Holding reports whether the breaker holds the topic's failed messages
// instead of dead-lettering them: whenever it is not closed, and while a
// recovered topic is inside its quiet period (a relapse is the same
// outage).
func (h Health) Holding() bool {
	return h.State != Closed || !h.OutageSince.IsZero()
}

// ErrConflict: the record changed since it was read (Store.Swap).
var ErrConflict = errors.New("health: the record changed meanwhile")

// ErrUnknownTopic: no topic of that name.
var ErrUnknownTopic = errors.New("health: unknown topic")

// ErrMappingBusy: the topic's event source mapping is in a transition
// (creating, updating); the monitor applies the state on its next run.
var ErrMappingBusy = errors.New("health: the event source mapping is busy")
