package cachepurge_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/cachepurge"
)

func TestPacerSpacesCallsAndHonoursTheAPIsLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := cachepurge.NewPacer(20, time.Now) // a slot every 50 ms
	w, err := p.Wait(ctx)
	require.NoError(t, err)
	require.Zero(t, w, "the first call goes at once")
	w, err = p.Wait(ctx)
	require.NoError(t, err)
	require.InDelta(t, 50*time.Millisecond, w, float64(20*time.Millisecond))

	// The API says the window is used up for 300 ms: every call waits.
	p.Observe(cachepurge.RateLimit{Known: true, Remaining: 0, Reset: 300 * time.Millisecond})
	start := time.Now()
	_, err = p.Wait(ctx)
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond)

	// A stricter policy (1 call per 200 ms) slows the pace.
	p.Observe(cachepurge.RateLimit{Known: true, Remaining: 10, Quota: 5, Window: time.Second})
	_, _ = p.Wait(ctx)
	start = time.Now()
	_, err = p.Wait(ctx)
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)
	delayed, waited := p.Stats()
	require.GreaterOrEqual(t, delayed, 3)
	require.Positive(t, waited)

	// A caller out of time gives up its wait.
	p.Observe(cachepurge.RateLimit{Known: true, Remaining: 0, Reset: time.Hour})
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err = p.Wait(cctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
