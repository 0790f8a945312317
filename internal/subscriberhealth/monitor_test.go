package subscriberhealth

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/topology"
)

func kinds(as []Alert) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Kind)
	}
	return out
}

// The monitor's step: each state's scheduled transition and the alerts it
// calls for, once each.
func TestMonitorStep(t *testing.T) {
	t.Parallel()
	tp := topology.Topic{Name: "crm.sync", MaxConcurrency: 10, Breaker: topology.Breaker{}.WithDefaults()}
	p := tp.Breaker
	t0 := time.Now().UTC()
	open := Health{Topic: tp.Name, State: Open, Since: t0, OutageSince: t0, ProbeAt: t0.Add(30 * time.Second), LastError: "HTTP 503"}

	cases := []struct {
		name    string
		h       Health
		now     time.Time
		backlog int
		state   State
		alerts  []string
		check   func(t *testing.T, h Health)
	}{
		{name: "a new outage is announced once", h: open, now: t0.Add(time.Second), backlog: 40, state: Open, alerts: []string{KindUnhealthy},
			check: func(t *testing.T, h Health) { require.True(t, h.Announced); require.Equal(t, 40, h.Backlog) }},
		{name: "an announced outage is not", h: with(open, func(h *Health) { h.Announced = true }), now: t0.Add(time.Second), backlog: -1, state: Open},
		{name: "probed when its backoff ran out", h: with(open, func(h *Health) { h.Announced = true }), now: t0.Add(30 * time.Second), backlog: -1, state: HalfOpen},
		{name: "half open through its window without a failure: closed", backlog: 7,
			h:   Health{Topic: tp.Name, State: HalfOpen, Since: t0, OutageSince: t0.Add(-time.Minute), Announced: true, Backlog: 40, FailedAt: t0.Add(-time.Second)},
			now: t0.Add(p.ProbeWindow), state: Closed,
			check: func(t *testing.T, h Health) {
				require.Equal(t, p.ProbeConcurrency, h.Concurrency)
				require.Equal(t, 40, h.Backlog, "the most that waited")
			}},
		{name: "half open with a failure in its window stays (the consumer reopens it)",
			h:   Health{Topic: tp.Name, State: HalfOpen, Since: t0, OutageSince: t0, Announced: true, FailedAt: t0.Add(time.Second)},
			now: t0.Add(p.ProbeWindow), backlog: -1, state: HalfOpen},
		{name: "a drain ramps", h: Health{Topic: tp.Name, State: Closed, Since: t0, RampedAt: t0, Concurrency: 2, OutageSince: t0.Add(-time.Minute), Announced: true},
			now: t0.Add(p.RampEvery), backlog: -1, state: Closed, check: func(t *testing.T, h Health) { require.Equal(t, 4, h.Concurrency) }},
		{name: "recovered after the quiet period, announced once",
			h:   Health{Topic: tp.Name, State: Closed, Since: t0, RecoveredAt: t0, OutageSince: t0.Add(-10 * time.Minute), Announced: true, Backlog: 1800},
			now: t0.Add(p.Quiet), backlog: -1, state: Closed, alerts: []string{KindRecovered},
			check: func(t *testing.T, h Health) { require.True(t, h.OutageSince.IsZero()); require.False(t, h.Holding()) }},
		{name: "an outage nobody heard of ends silently",
			h:   Health{Topic: tp.Name, State: Closed, Since: t0, OutageSince: t0.Add(-time.Minute)},
			now: t0.Add(p.Quiet), backlog: -1, state: Closed},
		{name: "escalated once past EscalateAfter", h: with(open, func(h *Health) { h.Announced, h.ProbeAt = true, t0.Add(2*time.Hour) }),
			now: t0.Add(p.EscalateAfter), backlog: -1, state: Open, alerts: []string{KindEscalated}},
		{name: "paused is left alone", h: Health{Topic: tp.Name, State: Paused, Since: t0}, now: t0.Add(48 * time.Hour), backlog: 5, state: Paused},
		{name: "healthy is left alone", h: Health{Topic: tp.Name, State: Closed}, now: t0, backlog: -1, state: Closed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, alerts := step(tc.h, tp, tc.now, tc.backlog)
			require.Equal(t, tc.state, h.State)
			require.Equal(t, tc.alerts, kinds(alerts))
			if tc.check != nil {
				tc.check(t, h)
			}
			again, more := step(h, tp, tc.now, tc.backlog)
			require.Empty(t, more, "no alert twice")
			if len(tc.alerts) > 0 {
				require.Equal(t, h.Announced, again.Announced)
			}
		})
	}
}

func with(h Health, f func(*Health)) Health { f(&h); return h }

func TestRecoveredAlertSaysHowLongAndHowMuch(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	a := alertOf(KindRecovered, Health{Topic: "crm.sync", OutageSince: t0, RecoveredAt: t0.Add(10*time.Minute + 3*time.Second), Backlog: 1800}, t0.Add(12*time.Minute))
	require.Equal(t, "10m3s", a.Outage)
	require.Equal(t, 1800, a.Backlog)
	require.Equal(t, "crm.sync: subscriber recovered after 10m3s", a.Subject())
}

func TestDueTimes(t *testing.T) {
	t.Parallel()
	tp := topology.Topic{Name: "crm.sync", Breaker: topology.Breaker{}.WithDefaults()}
	p := tp.Breaker
	t0 := time.Now().UTC()
	require.True(t, due(Health{State: Closed}, tp).IsZero(), "a healthy topic is never due")
	require.True(t, due(Health{State: Paused, Since: t0}, tp).IsZero())
	require.Equal(t, t0.Add(time.Second), due(Health{State: Open, ProbeAt: t0.Add(time.Second), OutageSince: t0}, tp))
	require.Equal(t, t0.Add(p.ProbeWindow), due(Health{State: HalfOpen, Since: t0, OutageSince: t0}, tp))
	require.Equal(t, t0.Add(p.RampEvery), due(Health{State: Closed, Concurrency: 2, RampedAt: t0}, tp))
	require.Equal(t, t0.Add(p.Quiet), due(Health{State: Closed, Since: t0, OutageSince: t0.Add(-time.Hour)}, tp))
}
