package subscriberhealth

import (
	"context"
	"time"
)

// Store keeps one Health record per topic. Every write is conditional.
type Store interface {
	// Get returns the topic's record, or a closed one of version 0 when
	// there is none.
	Get(ctx context.Context, topic string) (Health, error)
	// Fail adds f.Failures to the streak of the topic's record (creating it
	// closed), records f.LastError at f.At, and returns the record as
	// written: one write, whatever the state.
	Fail(ctx context.Context, f Failures) (Health, error)
	// Reset ends a streak: the streak becomes 0 if it was not. No write
	// happens (and no error) when it was 0 or there is no record.
	Reset(ctx context.Context, topic string) error
	// Swap replaces the record read as old (old.Version; 0: none yet) with
	// next, whose version becomes old.Version+1. It returns ErrConflict
	// when the stored version is another.
	Swap(ctx context.Context, old, next Health) (Health, error)
}

// Failures is one batch's transient subscriber failures.
type Failures struct {
	Topic     string
	Failures  int
	LastError string
	At        time.Time
}

// Notifier tells the health monitor a topic's state changed, so it
// applies the state to the topic's event source mapping at once rather
// than at its next scheduled run (the subscriber-health function, invoked
// asynchronously).
type Notifier interface {
	Changed(ctx context.Context, topic string) error
}

// Mappings are the topics' event source mappings (the Lambda API).
type Mappings interface {
	// Mapping reads the topic's mapping.
	Mapping(ctx context.Context, topic string) (Mapping, error)
	// Set enables or disables the topic's mapping and sets its maximum
	// concurrency (when enabled).
	Set(ctx context.Context, topic string, m Mapping) error
}

// Mapping is what the breaker controls of an event source mapping.
type Mapping struct {
	Enabled bool
	// MaxConcurrency is ScalingConfig.MaximumConcurrency (0: unset).
	MaxConcurrency int
}

// Backlogs count the messages waiting in a topic's queue.
type Backlogs interface {
	Backlog(ctx context.Context, topic string) (int, error)
}

// Alerter delivers alerts (the platform's SNS alert topic).
type Alerter interface {
	Alert(ctx context.Context, a Alert) error
}

// Notice is the subscriber-health function's input when a consumer or an
// operator changed a topic's state ({"topic":"billing.events"}); its
// scheduled runs get an EventBridge event instead.
type Notice struct {
	Topic string `json:"topic"`
}
