package bounded_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/bounded"
)

// Every index runs once, never more than the limit at a time (a limit
// below one is one).
func TestEachRunsEveryIndexOnceWithinTheLimit(t *testing.T) {
	t.Parallel()
	for _, limit := range []int{0, 1, 3, 50} {
		var running, peak atomic.Int32
		seen := make([]atomic.Int32, 20)
		bounded.Each(len(seen), limit, func(i int) {
			n := running.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(time.Millisecond)
			seen[i].Add(1)
			running.Add(-1)
		})
		for i := range seen {
			require.EqualValues(t, 1, seen[i].Load(), "limit %d index %d", limit, i)
		}
		require.LessOrEqual(t, int(peak.Load()), max(limit, 1), "limit %d", limit)
	}
}
