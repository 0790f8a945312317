package replay_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/replay"
)

func TestParseWhen(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		err  bool
	}{
		{"", time.Time{}, false},
		{"24h", now.Add(-24 * time.Hour), false},
		{"90m", now.Add(-90 * time.Minute), false},
		{"7d", now.Add(-7 * 24 * time.Hour), false},
		{"2026-12-01T08:00:00Z", time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC), false},
		{"2026-12-01T09:00:00+01:00", time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC), false},
		{"-5h", time.Time{}, true},
		{"yesterday", time.Time{}, true},
		{"7 d", time.Time{}, true},
	} {
		got, err := replay.ParseWhen(tc.in, now)
		if tc.err {
			require.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.True(t, tc.want.Equal(got), "%s: %s", tc.in, got)
	}
}
