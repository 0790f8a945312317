package subscriberhealth

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/topology"
)

func TestBreakerLifecycle(t *testing.T) {
	t.Parallel()
	p := topology.Breaker{TripAfter: 3}.WithDefaults()
	t0 := time.Now().UTC()
	h := Health{Topic: "a.events", State: Closed, Streak: 2}

	_, changed := trip(h, p, t0)
	require.False(t, changed, "below TripAfter")

	h.Streak = 3
	h, changed = trip(h, p, t0)
	require.True(t, changed)
	require.Equal(t, Open, h.State)
	require.Equal(t, t0, h.OutageSince)
	require.Equal(t, t0.Add(30*time.Second), h.ProbeAt)
	require.True(t, h.Holding())

	_, changed = probe(h, t0.Add(29*time.Second))
	require.False(t, changed, "before its backoff ran out")
	h, changed = probe(h, t0.Add(30*time.Second))
	require.True(t, changed)
	require.Equal(t, HalfOpen, h.State)

	// A failed probe backs off twice as long.
	h, changed = reopen(h, p, t0.Add(31*time.Second))
	require.True(t, changed)
	require.Equal(t, Open, h.State)
	require.Equal(t, t0.Add(31*time.Second+time.Minute), h.ProbeAt)

	h, _ = probe(h, h.ProbeAt)
	h, changed = recoverTopic(h, p, t0.Add(2*time.Minute), "probe succeeded", 40)
	require.True(t, changed)
	require.Equal(t, Closed, h.State)
	require.Equal(t, 2, h.Concurrency, "the drain starts at the probe concurrency")
	require.Equal(t, 40, h.Backlog)
	require.True(t, h.Holding(), "a recovered topic holds through its quiet period")

	// Ramp 2 → 4 → 8 → the topic's own (10): 0, a step per RampEvery.
	at := h.Since
	_, changed = ramp(h, p, 10, at.Add(p.RampEvery-time.Second))
	require.False(t, changed, "too soon after the recovery")
	for _, want := range []int{4, 8, 0} {
		at = at.Add(p.RampEvery)
		h, changed = ramp(h, p, 10, at)
		require.True(t, changed)
		require.Equal(t, want, h.Concurrency)
	}
	_, changed = ramp(h, p, 10, at.Add(time.Hour))
	require.False(t, changed)

	_, changed = settle(h, p, h.Since.Add(p.Quiet-time.Second))
	require.False(t, changed, "inside the quiet period")
	// A relapse inside the quiet period is the same outage, probed later.
	relapse := h
	relapse.Streak = 3
	relapse, _ = trip(relapse, p, h.Since.Add(time.Minute))
	require.Equal(t, t0, relapse.OutageSince)
	require.Equal(t, 2, relapse.Level)
	require.Equal(t, h.Since.Add(time.Minute+2*time.Minute), relapse.ProbeAt)

	h, changed = settle(h, p, h.Since.Add(p.Quiet))
	require.True(t, changed)
	require.True(t, h.OutageSince.IsZero())
	require.Zero(t, h.Level)
	require.False(t, h.Holding())
}

func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	p := topology.Breaker{}.WithDefaults()
	t0 := time.Now().UTC()
	h, changed := pause(Health{Topic: "a.events", State: Open, ProbeAt: t0}, t0, "ops", "maintenance")
	require.True(t, changed)
	require.Equal(t, Paused, h.State)
	require.Equal(t, "paused by ops: maintenance", h.Reason)
	_, changed = probe(h, t0.Add(time.Hour))
	require.False(t, changed, "only an operator resumes a paused topic")
	h, changed = resume(h, p, t0, "ops")
	require.True(t, changed)
	require.Equal(t, Closed, h.State)
	require.Equal(t, p.ProbeConcurrency, h.Concurrency)
}

func TestDesiredMapping(t *testing.T) {
	t.Parallel()
	tp := topology.Topic{Name: "a.events", MaxConcurrency: 10}
	cases := []struct {
		h    Health
		want Mapping
	}{
		{Health{State: Closed}, Mapping{Enabled: true, MaxConcurrency: 10}},
		{Health{State: Closed, Concurrency: 4}, Mapping{Enabled: true, MaxConcurrency: 4}},
		{Health{State: Open}, Mapping{}},
		{Health{State: Paused}, Mapping{}},
		{Health{State: HalfOpen}, Mapping{Enabled: true, MaxConcurrency: 2}},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, desired(tc.h, tp), tc.h.State)
	}
}

func TestProbeDelayDoublesToItsCap(t *testing.T) {
	t.Parallel()
	p := topology.Breaker{}.WithDefaults()
	var got []time.Duration
	for level := range 7 {
		got = append(got, p.ProbeDelay(level))
	}
	require.Equal(t, []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 2 * time.Minute, 2 * time.Minute, 2 * time.Minute, 2 * time.Minute}, got)
	p.ProbeMax = 15 * time.Minute
	require.Equal(t, 15*time.Minute, p.ProbeDelay(6))
}
