package admin_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/admin"
)

// The limit's arithmetic: Free attempts go straight through, then each
// waits twice the last, capped; a quiet source is forgiven; the record
// expires only once its lock passed and its failures are forgotten.
func TestSignInLimitBacksOffAndForgets(t *testing.T) {
	t.Parallel()
	l := admin.SignInLimit{Free: 3, Backoff: time.Second, MaxBackoff: 10 * time.Second, Forget: time.Hour}
	require.NoError(t, l.Validate())
	now := time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)
	var rec admin.SignInRecord
	var waits []time.Duration
	for range 8 {
		next, ok, wait := l.Attempt(rec, now)
		require.True(t, ok)
		require.Zero(t, wait)
		rec = next
		if rec.LockedUntil.IsZero() {
			waits = append(waits, 0)
		} else {
			waits = append(waits, rec.LockedUntil.Sub(now))
			_, ok, wait = l.Attempt(rec, now.Add(rec.LockedUntil.Sub(now)/2))
			require.False(t, ok, "refused while locked")
			require.Equal(t, rec.LockedUntil.Sub(now)/2, wait)
		}
		require.True(t, rec.Expires.Equal(rec.LastAt.Add(time.Hour)), "expires when forgotten (%s)", rec.Expires)
		if !rec.LockedUntil.IsZero() {
			now = rec.LockedUntil
		}
	}
	require.Equal(t, []time.Duration{0, 0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}, waits)
	require.Equal(t, 8, rec.Failures)

	quiet := now.Add(time.Hour)
	next, ok, _ := l.Attempt(rec, quiet)
	require.True(t, ok)
	require.Equal(t, 1, next.Failures, "an hour's quiet forgives")
	require.True(t, next.LockedUntil.Equal(rec.LockedUntil), "and sets no new lock")
}

func TestSignInLimitValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, admin.SignInLimit{}.WithDefaults().Validate())
	for _, bad := range []admin.SignInLimit{
		{Free: 0, Backoff: time.Second, MaxBackoff: time.Minute, Forget: time.Hour},
		{Free: 5, Backoff: time.Millisecond, MaxBackoff: time.Minute, Forget: time.Hour},
		{Free: 5, Backoff: time.Minute, MaxBackoff: time.Second, Forget: time.Hour},
		{Free: 5, Backoff: time.Second, MaxBackoff: time.Hour, Forget: time.Minute},
	} {
		require.Error(t, bad.Validate(), "%+v", bad)
	}
}

// The source is the address, an IPv6 one by its /64, never stored as is.
func TestSignInSource(t *testing.T) {
	t.Parallel()
	a := admin.Source("203.0.113.9")
	require.Len(t, a, 32)
	require.NotContains(t, a, "203")
	require.Equal(t, a, admin.Source("::ffff:203.0.113.9"), "an IPv4-mapped address is the IPv4 one")
	require.NotEqual(t, a, admin.Source("203.0.113.10"))
	require.Equal(t, admin.Source("2001:db8:1:2::1"), admin.Source("2001:db8:1:2:ffff::9"), "one /64")
	require.NotEqual(t, admin.Source("2001:db8:1:2::1"), admin.Source("2001:db8:1:3::1"))
	require.Equal(t, admin.Source(""), admin.Source("not an address"), "unknown sources share one")
}
