package outbox_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/outbox"
)

func TestRowStates(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		row                  outbox.Row
		claimable, delivered bool
	}{
		{outbox.Row{Status: outbox.StatusPending}, true, false},
		{outbox.Row{Status: outbox.StatusPending, LeaseUntil: now.Add(time.Second)}, false, false},
		{outbox.Row{Status: outbox.StatusFailed, LeaseUntil: now.Add(-time.Second)}, true, false},
		{outbox.Row{Status: outbox.StatusEnqueued}, false, true},
		{outbox.Row{Status: outbox.StatusProcessing}, false, true},
		{outbox.Row{Status: outbox.StatusCompleted}, false, true},
		{outbox.Row{Status: outbox.StatusDLQ}, false, true},
		{outbox.Row{Status: outbox.StatusDLQAbandoned}, false, false},
	}
	for _, tc := range cases {
		require.Equal(t, tc.claimable, tc.row.Claimable(now), "%+v claimable", tc.row)
		require.Equal(t, tc.delivered, tc.row.Delivered(), "%+v delivered", tc.row)
	}
}
