package ledger_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

func TestSummarize(t *testing.T) {
	t.Parallel()
	rows := func(ss ...outbox.Status) []outbox.Row {
		var out []outbox.Row
		for _, s := range ss {
			out = append(out, outbox.Row{Status: s})
		}
		return out
	}
	cases := []struct {
		rows []outbox.Row
		want string
	}{
		{nil, "received"},
		{rows(outbox.StatusPending), "received"},
		{rows(outbox.StatusEnqueued, outbox.StatusPending), "received"},
		{rows(outbox.StatusEnqueued, outbox.StatusProcessing), "enqueued"},
		{rows(outbox.StatusCompleted, outbox.StatusCompleted), "completed"},
		{rows(outbox.StatusCompleted, outbox.StatusFailed), "failed"},
		{rows(outbox.StatusCompleted, outbox.StatusDLQ), "dlq"},
		{rows(outbox.StatusDLQAbandoned, outbox.StatusFailed), "dlq"},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, ledger.Summarize(tc.rows), "%v", tc.rows)
	}
}
