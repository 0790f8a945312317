package subscriberhealth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// Monitor is the subscriber-health function: on a schedule (and when a
// consumer or an operator says a topic changed) it moves each topic's
// breaker along its policy — probes an open topic whose backoff ran out,
// closes a half-open one that went a probe window without a failure, ramps
// a draining topic's concurrency, ends an outage after the quiet period,
// escalates a long one — announces each transition once, and applies the
// state to the topic's event source mapping.
type Monitor struct {
	cfg    MonitorConfig
	d      MonitorDeps
	topics map[string]topology.Topic
}

// MonitorConfig configures a Monitor.
type MonitorConfig struct {
	// Topics are the topics it watches: those with a consumer and a
	// breaker.
	Topics []topology.Topic
	// Period is the schedule's (default 1 minute, EventBridge's finest):
	// a run that finds a topic due again before the next one (a probe, a
	// probe window's end, a ramp step) waits for it, so an outage is probed
	// on time; a healthy stage's run returns at once.
	Period time.Duration
}

// DefaultPeriod is the monitor's schedule.
const DefaultPeriod = time.Minute

// runMargin is kept free before the invocation's deadline.
const runMargin = 5 * time.Second

// MonitorDeps are what a Monitor talks to.
type MonitorDeps struct {
	Store    Store
	Mappings Mappings
	// Backlogs reads queue depths (nil: backlogs are reported as 0).
	Backlogs Backlogs
	Alerter  Alerter
	Metrics  *metric.Emitter
	Log      *slog.Logger
	Now      func() time.Time
}

// NewMonitor builds the monitor.
func NewMonitor(cfg MonitorConfig, d MonitorDeps) (*Monitor, error) {
	var errs []error
	topics := map[string]topology.Topic{}
	for _, tp := range cfg.Topics {
		tp.Breaker = tp.Breaker.WithDefaults()
		if err := tp.Breaker.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("health: %s: %w", tp.Name, err))
		}
		topics[tp.Name] = tp
	}
	if d.Store == nil || d.Mappings == nil || d.Alerter == nil {
		errs = append(errs, errors.New("health: the monitor needs a store, the mappings and an alerter"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Period == 0 {
		cfg.Period = DefaultPeriod
	}
	d.Now, d.Log = clock.Or(d.Now), logging.OrDiscard(d.Log)
	if d.Metrics == nil {
		d.Metrics = metric.Discard()
	}
	return &Monitor{cfg: cfg, d: d, topics: topics}, nil
}

// Report is what one run did, per topic.
type Report struct {
	Topics []TopicReport `json:"topics"`
}

// TopicReport is one topic's part of a run.
type TopicReport struct {
	Topic   string   `json:"topic"`
	State   State    `json:"state"`
	Alerts  []string `json:"alerts,omitempty"`
	Mapping *Mapping `json:"mapping,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// Handle is the function's handler: an EventBridge scheduled event runs
// every topic; a Notice runs its topic. One topic's failure does not stop
// the others; the run fails (and is retried) when any failed.
func (m *Monitor) Handle(ctx context.Context, raw json.RawMessage) (Report, error) {
	var n Notice
	_ = json.Unmarshal(raw, &n)
	if n.Topic != "" {
		if _, ok := m.topics[n.Topic]; !ok {
			m.d.Log.WarnContext(ctx, "health: notice for a topic the monitor does not watch", "topic", n.Topic)
			return Report{}, nil
		}
		return m.runFor(ctx, []string{n.Topic}, true)
	}
	return m.Run(ctx)
}

// Run ticks every watched topic, then again each topic that is due before
// the next scheduled run, until none is (or the invocation's time is up).
func (m *Monitor) Run(ctx context.Context) (Report, error) {
	names := make([]string, 0, len(m.cfg.Topics))
	for _, tp := range m.cfg.Topics {
		names = append(names, tp.Name)
	}
	return m.run(ctx, names)
}

func (m *Monitor) run(ctx context.Context, names []string) (Report, error) {
	return m.runFor(ctx, names, false)
}

func (m *Monitor) runFor(ctx context.Context, names []string, notice bool) (Report, error) {
	horizon := m.d.Now().Add(m.cfg.Period)
	if dl, ok := ctx.Deadline(); ok {
		horizon = minTime(horizon, dl.Add(-runMargin))
	}
	var (
		rep  Report
		errs []error
	)
	for len(names) > 0 {
		dues := map[string]time.Time{}
		for _, name := range names {
			tr, h, err := m.tick(ctx, name, notice)
			rep.Topics = append(rep.Topics, tr)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if at := due(h, m.topics[name]); !at.IsZero() && at.Before(horizon) {
				dues[name] = at
			}
		}
		names = names[:0]
		var next time.Time
		for name, at := range dues {
			if next.IsZero() || at.Before(next) {
				next = at
			}
			names = append(names, name)
		}
		if len(names) == 0 {
			break
		}
		if err := clock.Sleep(ctx, next.Sub(m.d.Now())); err != nil {
			break
		}
	}
	return rep, errors.Join(errs...)
}

// due is when the record next calls for a transition (zero: never without
// a failure, a success or an operator).
func due(h Health, tp topology.Topic) time.Time {
	p := tp.Breaker
	switch h.State {
	case Open:
		return earliest(h.ProbeAt, escalation(h, p))
	case HalfOpen:
		return earliest(h.Since.Add(p.ProbeWindow), escalation(h, p))
	case Closed:
		if h.Concurrency > 0 {
			return h.RampedAt.Add(p.RampEvery)
		}
		if !h.OutageSince.IsZero() {
			return h.Since.Add(p.Quiet)
		}
	}
	return time.Time{}
}

func escalation(h Health, p topology.Breaker) time.Time {
	if h.Escalated || h.OutageSince.IsZero() {
		return time.Time{}
	}
	return h.OutageSince.Add(p.EscalateAfter)
}

// earliest of the non-zero times (zero when both are).
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero():
		return a
	}
	return minTime(a, b)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// Tick advances one topic's breaker, sends the alerts its transitions
// call for, and applies its state to the event source mapping.
func (m *Monitor) Tick(ctx context.Context, topic string) (TopicReport, error) {
	tr, _, err := m.tick(ctx, topic, true)
	return tr, err
}

// tick is Tick; a scheduled tick of a settled healthy topic leaves its
// mapping alone (no Lambda API call on the happy path: it is as deployed,
// or as the last tick of its outage set it), a notice always checks it.
func (m *Monitor) tick(ctx context.Context, topic string, notice bool) (TopicReport, Health, error) {
	tp, ok := m.topics[topic]
	if !ok {
		return TopicReport{Topic: topic}, Health{}, fmt.Errorf("%w: %s", ErrUnknownTopic, topic)
	}
	tr := TopicReport{Topic: topic}
	h, alerts, err := m.advance(ctx, tp)
	if err != nil {
		tr.Error = err.Error()
		return tr, Health{}, err
	}
	tr.State = h.State
	m.d.Metrics.Emit(map[string]string{DimensionTopic: topic}, metric.Metric{Name: MetricOutageSeconds, Unit: metric.Seconds, Value: outageSeconds(h, m.d.Now())})
	for _, a := range alerts {
		tr.Alerts = append(tr.Alerts, a.Kind)
		if err := m.d.Alerter.Alert(ctx, a); err != nil {
			// The transition is recorded; its alert is not sent again (one
			// per transition, never a storm): the error log is the trace.
			m.d.Log.ErrorContext(ctx, "health: could not send an alert", "topic", topic, "kind", a.Kind, "error", err)
			m.d.Metrics.Emit(map[string]string{DimensionTopic: topic}, metric.Metric{Name: "AlertsFailed", Unit: metric.Count, Value: 1})
		}
	}
	if !notice && settled(h) && len(alerts) == 0 {
		return tr, h, nil
	}
	applied, err := m.apply(ctx, tp, h)
	if errors.Is(err, ErrMappingBusy) {
		m.d.Log.InfoContext(ctx, "health: the event source mapping is busy; set on the next run", "topic", topic, "error", err)
		return tr, h, nil
	}
	if err != nil {
		tr.Error = err.Error()
		return tr, h, err
	}
	tr.Mapping = applied
	return tr, h, nil
}

// advance makes the transitions the record calls for at now, each a
// conditional swap (re-read and redone when another writer won), and
// returns the record as it ends and the alerts of the transitions made.
func (m *Monitor) advance(ctx context.Context, tp topology.Topic) (Health, []Alert, error) {
	now := m.d.Now()
	for range swapAttempts {
		h, err := m.d.Store.Get(ctx, tp.Name)
		if err != nil {
			return Health{}, nil, err
		}
		backlog := -1
		if m.d.Backlogs != nil && (h.State == Open || h.State == HalfOpen) {
			n, err := m.d.Backlogs.Backlog(ctx, tp.Name)
			if err != nil {
				m.d.Log.WarnContext(ctx, "health: could not read the topic's backlog", "topic", tp.Name, "error", err)
			} else {
				backlog = n
			}
		}
		next, alerts := step(h, tp, now, backlog)
		if next == h {
			return h, nil, nil
		}
		written, err := m.d.Store.Swap(ctx, h, next)
		if errors.Is(err, ErrConflict) {
			continue
		}
		if err != nil {
			return Health{}, nil, err
		}
		if written.State != h.State {
			m.d.Log.InfoContext(ctx, "health: breaker moved", "topic", tp.Name, "from", string(h.State), "to", string(written.State), "reason", written.Reason)
			m.d.Metrics.Emit(map[string]string{DimensionTopic: tp.Name, "State": string(written.State)}, metric.Metric{Name: "BreakerTransitions", Unit: metric.Count, Value: 1})
		}
		return written, alerts, nil
	}
	return Health{}, nil, fmt.Errorf("health: %s: the record kept changing", tp.Name)
}

// step is every transition the monitor makes to a record at now, and the
// alerts they call for (pure). backlog is the queue depth (-1: unknown).
func step(h Health, tp topology.Topic, now time.Time, backlog int) (Health, []Alert) {
	p := tp.Breaker
	var alerts []Alert
	if backlog > h.Backlog && (h.State == Open || h.State == HalfOpen) {
		h.Backlog = backlog // the most that waited: what the drain delivers
	}
	switch h.State {
	case Open:
		h, _ = probe(h, now)
	case HalfOpen:
		if now.Sub(h.Since) >= p.ProbeWindow && h.FailedAt.Before(h.Since) {
			h, _ = recoverTopic(h, p, now, "no failure in the probe window", backlog)
		}
	case Closed:
		if next, ok := ramp(h, p, tp.NormalConcurrency(), now); ok {
			h = next
		} else if h.Announced {
			if next, ok := settle(h, p, now); ok {
				alerts = append(alerts, alertOf(KindRecovered, h, now))
				h = next
			}
		} else if next, ok := settle(h, p, now); ok {
			h = next // an outage nobody was told of ends silently
		}
	}
	if (h.State == Open || h.State == HalfOpen) && !h.Announced {
		h.Announced = true
		alerts = append(alerts, alertOf(KindUnhealthy, h, now))
	}
	if h.State != Closed && h.State != Paused && !h.OutageSince.IsZero() && !h.Escalated && now.Sub(h.OutageSince) >= p.EscalateAfter {
		h.Escalated = true
		alerts = append(alerts, alertOf(KindEscalated, h, now))
	}
	return h, alerts
}

// Metric names and dimension of the monitor (the CDK app's alarms read
// them).
const (
	// MetricOutageSeconds is how long the topic's current outage has
	// lasted while it is open, half open or paused (0 otherwise), emitted
	// on every tick: the open-too-long alarm compares it with the
	// policy's EscalateAfter.
	MetricOutageSeconds = "BreakerOutageSeconds"
	DimensionTopic      = "Topic"
)

// outageSeconds is the value of MetricOutageSeconds.
func outageSeconds(h Health, now time.Time) float64 {
	if h.State == Closed {
		return 0
	}
	since := h.OutageSince
	if since.IsZero() {
		since = h.Since // paused by hand
	}
	return max(now.Sub(since).Seconds(), 0)
}

// alertOf is the alert of kind for the record h at now.
func alertOf(kind string, h Health, now time.Time) Alert {
	a := Alert{Kind: kind, Topic: h.Topic, State: h.State, Since: h.OutageSince, Reason: h.Reason,
		LastError: h.LastError, ProbeAt: h.ProbeAt, At: now}
	switch kind {
	case KindRecovered:
		end := h.RecoveredAt
		if end.IsZero() {
			end = h.Since
		}
		a.Outage, a.Backlog = end.Sub(h.OutageSince).Round(time.Second).String(), h.Backlog
	case KindEscalated:
		a.Outage = now.Sub(h.OutageSince).Round(time.Second).String()
	}
	return a
}

// settled: closed at full concurrency with no outage to finish.
func settled(h Health) bool {
	return h.State == Closed && h.Concurrency == 0 && h.OutageSince.IsZero()
}

// apply sets the topic's event source mapping to what its state asks for,
// when it differs (nil: nothing to change).
func (m *Monitor) apply(ctx context.Context, tp topology.Topic, h Health) (*Mapping, error) {
	want := desired(h, tp)
	got, err := m.d.Mappings.Mapping(ctx, tp.Name)
	if err != nil {
		return nil, err
	}
	if same(got, want, tp) {
		return nil, nil
	}
	if err := m.d.Mappings.Set(ctx, tp.Name, want); err != nil {
		return nil, err
	}
	m.d.Log.InfoContext(ctx, "health: event source mapping set", "topic", tp.Name, "state", string(h.State),
		"enabled", want.Enabled, "maxConcurrency", want.MaxConcurrency, "was", got)
	return &want, nil
}

// same reports whether the mapping already is what is wanted. A disabled
// mapping's concurrency does not matter; an unbounded topic's unset
// concurrency is its normal one.
func same(got, want Mapping, tp topology.Topic) bool {
	if got.Enabled != want.Enabled {
		return false
	}
	if !want.Enabled {
		return true
	}
	gc := got.MaxConcurrency
	if gc == 0 {
		gc = tp.NormalConcurrency()
	}
	return gc == want.MaxConcurrency
}
