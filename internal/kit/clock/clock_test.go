package clock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/clock"
)

func TestOrDefaultsToWallClock(t *testing.T) {
	t.Parallel()
	fixed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	require.Equal(t, fixed, clock.Or(func() time.Time { return fixed })())
	before := time.Now()
	require.False(t, clock.Or(nil)().Before(before))
}

func TestSleepWaitsOrStopsWithTheContext(t *testing.T) {
	t.Parallel()
	require.NoError(t, clock.Sleep(context.Background(), time.Millisecond), "a short wait ends by itself")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, clock.Sleep(ctx, time.Hour), context.Canceled, "a done context ends the wait at once")

	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, clock.Sleep(ctx, time.Hour), context.DeadlineExceeded)
}
