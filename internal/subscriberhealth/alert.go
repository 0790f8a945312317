package subscriberhealth

import (
	"context"
	"log/slog"
	"time"
)

// Alert kinds. Subscriptions filter on them: never rename one.
const (
	// KindUnhealthy: the topic's breaker opened (once per outage).
	KindUnhealthy = "subscriber_unhealthy"
	// KindRecovered: the outage is over: the subscriber took its probe and
	// stayed up for the quiet period; carries the outage's length and the
	// backlog it drained.
	KindRecovered = "subscriber_recovered"
	// KindEscalated: the outage outlasted the policy's EscalateAfter.
	KindEscalated = "subscriber_escalated"
)

// Alert is one breaker transition an operator hears of. It never carries
// an event's payload.
type Alert struct {
	Kind  string `json:"kind"`
	Topic string `json:"topic"`
	State State  `json:"state"`
	// Since is when the outage began.
	Since     time.Time `json:"since"`
	Reason    string    `json:"reason,omitempty"`
	LastError string    `json:"lastError,omitempty"`
	// Outage is how long the outage lasted (recovered) or has lasted so
	// far (escalated), rounded to seconds, e.g. "10m3s".
	Outage string `json:"outage,omitempty"`
	// Backlog is how many messages waited when the subscriber recovered.
	Backlog int       `json:"backlog,omitempty"`
	ProbeAt time.Time `json:"probeAt,omitzero"`
	At      time.Time `json:"at"`
}

// Subject is the alert's human subject line.
func (a Alert) Subject() string {
	switch a.Kind {
	case KindRecovered:
		return a.Topic + ": subscriber recovered after " + a.Outage
	case KindEscalated:
		return a.Topic + ": subscriber still down after " + a.Outage
	default:
		return a.Topic + ": subscriber unhealthy, topic paused"
	}
}

// LogAlerter writes alerts as log lines: the alert channel when no alert
// topic is configured.
type LogAlerter struct{ Log *slog.Logger }

// Alert logs the alert at warning level.
func (l LogAlerter) Alert(ctx context.Context, a Alert) error {
	log := l.Log
	if log == nil {
		log = slog.Default()
	}
	log.WarnContext(ctx, "ALERT "+a.Kind, "topic", a.Topic, "state", string(a.State), "since", a.Since,
		"reason", a.Reason, "lastError", a.LastError, "outage", a.Outage, "backlog", a.Backlog)
	return nil
}
