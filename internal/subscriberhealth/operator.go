package subscriberhealth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// Operator is what operators see and do of the topics' health (the admin
// API, the console, `evp topics`): list every topic's state, pause a topic
// by hand (its deliveries stop, its queue holds the events; only an
// operator resumes it) and resume it (drained at a ramp, like a recovery).
type Operator struct {
	Store Store
	// Notifier applies a pause or resume at once (nil: at the monitor's
	// next scheduled run).
	Notifier Notifier
	Topology topology.Topology
	Log      *slog.Logger
	Now      func() time.Time
}

// ErrBreakerOff: the topic's policy has no breaker, so nothing pauses it.
var ErrBreakerOff = errors.New("health: the topic has no breaker")

// ErrNotPaused: only a paused topic can be resumed (an open one resumes
// itself when its subscriber answers a probe).
var ErrNotPaused = errors.New("health: the topic is not paused")

// View is a topic's health as operators see it.
type View struct {
	State     State     `json:"state"`
	Since     time.Time `json:"since,omitzero"`
	Reason    string    `json:"reason,omitempty"`
	LastError string    `json:"lastError,omitempty"`
	// FailedAt is when LastError was recorded.
	FailedAt time.Time `json:"failedAt,omitzero"`
	ProbeAt  time.Time `json:"probeAt,omitzero"`
}

// TopicView is one topic and its health.
type TopicView struct {
	Topic  string `json:"topic"`
	Health View   `json:"health"`
}

// ViewOf is the record as operators see it.
func ViewOf(h Health) View {
	return View{State: h.State, Since: h.Since, Reason: h.Reason, LastError: h.LastError, FailedAt: h.FailedAt, ProbeAt: h.ProbeAt}
}

// List returns every topic of the topology with its health, in the
// topology's order (a topic without a breaker reads closed, "no breaker").
func (o *Operator) List(ctx context.Context) ([]TopicView, error) {
	out := make([]TopicView, 0, len(o.Topology.Topics))
	for _, tp := range o.Topology.Topics {
		if tp.Breaker.Off {
			out = append(out, TopicView{Topic: tp.Name, Health: View{State: Closed, Reason: "no breaker"}})
			continue
		}
		h, err := o.Store.Get(ctx, tp.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, TopicView{Topic: tp.Name, Health: ViewOf(h)})
	}
	return out, nil
}

// Pause pauses the topic (any state; already paused is no change).
func (o *Operator) Pause(ctx context.Context, topic, who, why string) (Health, error) {
	return o.change(ctx, topic, func(h Health, _ topology.Breaker, now time.Time) (Health, bool, error) {
		next, changed := pause(h, now, who, why)
		return next, changed, nil
	})
}

// Resume closes a paused topic; its backlog drains at a ramp.
func (o *Operator) Resume(ctx context.Context, topic, who string) (Health, error) {
	return o.change(ctx, topic, func(h Health, p topology.Breaker, now time.Time) (Health, bool, error) {
		if h.State != Paused {
			return h, false, fmt.Errorf("%w: %s is %s", ErrNotPaused, topic, h.State)
		}
		next, changed := resume(h, p, now, who)
		return next, changed, nil
	})
}

func (o *Operator) change(ctx context.Context, topic string, f func(Health, topology.Breaker, time.Time) (Health, bool, error)) (Health, error) {
	tp, ok := o.Topology.Topic(topic)
	if !ok {
		return Health{}, fmt.Errorf("%w: %s", ErrUnknownTopic, topic)
	}
	if tp.Breaker.Off {
		return Health{}, fmt.Errorf("%w: %s", ErrBreakerOff, topic)
	}
	p := tp.Breaker.WithDefaults()
	log := logging.OrDiscard(o.Log)
	for range swapAttempts {
		h, err := o.Store.Get(ctx, topic)
		if err != nil {
			return Health{}, err
		}
		next, changed, err := f(h, p, clock.Or(o.Now)())
		if err != nil || !changed {
			return h, err
		}
		written, err := o.Store.Swap(ctx, h, next)
		if errors.Is(err, ErrConflict) {
			continue
		}
		if err != nil {
			return Health{}, err
		}
		log.InfoContext(ctx, "health: an operator changed a topic", "topic", topic, "from", string(h.State), "to", string(written.State), "reason", written.Reason)
		if o.Notifier != nil {
			if err := o.Notifier.Changed(ctx, topic); err != nil {
				log.WarnContext(ctx, "health: could not notify the monitor; its next scheduled run applies the state", "topic", topic, "error", err)
			}
		}
		return written, nil
	}
	return Health{}, fmt.Errorf("health: %s: the record kept changing", topic)
}
