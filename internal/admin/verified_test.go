package admin

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The cache holds at most BearerCacheSize pairs: a full one drops its
// stale pairs for a new one, and while every pair is fresh it remembers
// no more (those keys are checked with a read, as without a cache).
func TestVerifiedKeysAreBounded(t *testing.T) {
	t.Parallel()
	var v verifiedKeys
	now := time.Unix(1_700_000_000, 0)
	for i := range BearerCacheSize + 10 {
		v.remember(fmt.Sprintf("source-%d", i), "Bearer k", now)
	}
	require.Equal(t, BearerCacheSize, v.size())
	require.False(t, v.fresh(fmt.Sprintf("source-%d", BearerCacheSize), "Bearer k", now), "not remembered while full of fresh pairs")
	require.True(t, v.fresh("source-0", "Bearer k", now))
	require.False(t, v.fresh("source-0", "Bearer other", now), "per key")

	later := now.Add(BearerCacheTTL)
	require.False(t, v.fresh("source-0", "Bearer k", later), "stale at the TTL")
	v.remember("new", "Bearer k", later)
	require.Equal(t, 1, v.size(), "the stale pairs made room")
	require.True(t, v.fresh("new", "Bearer k", later))
	v.forget("new")
	require.False(t, v.fresh("new", "Bearer k", later))
}
