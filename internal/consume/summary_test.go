package consume_test

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/kit/testkit"
)

// A deployed stage logs at INFO (Lambda's application log level): one
// summary line per invocation, whatever the batch size; each event's
// detail is DEBUG, and failures are warnings or errors, always logged.
func TestOneInfoLinePerInvocation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	logs := &testkit.Buffer{}
	b.rebuild(t, func(_ *consume.Config, d *consume.Deps) {
		d.Log = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	for i := range 4 {
		b.publish(t, fmt.Sprintf("evt_log_%d", i), "")
	}
	msgs := b.receive(t, 4, 0)
	require.Len(t, msgs, 4)
	failing := eventIDOf(t, msgs[1])
	b.handler.fail = func(m consume.Message, _ int) error {
		if m.Event.ID == failing {
			return errors.New("downstream answered 503")
		}
		return nil
	}
	require.Len(t, b.invoke(t, msgs), 1)

	levels := map[string][]string{}
	var summary map[string]any
	for _, l := range logs.JSONLines(t) {
		lvl, msg := fmt.Sprint(l["level"]), fmt.Sprint(l["msg"])
		levels[lvl] = append(levels[lvl], msg)
		if msg == "consume: batch" {
			summary = l
		}
	}
	require.Equal(t, []string{"consume: batch"}, levels["INFO"], "one INFO line per invocation")
	require.Len(t, levels["DEBUG"], 3, "a line per completed event, at DEBUG")
	require.Len(t, levels["WARN"], 1, "the failure is always logged")
	require.NotNil(t, summary)
	require.Equal(t, b.topic.Name, summary["topic"])
	for k, want := range map[string]float64{"records": 4, "completed": 3, "retried": 1, "duplicates": 0, "deadLettered": 0} {
		require.Equal(t, want, summary[k], k)
	}
	require.Contains(t, summary, "durationMs")
}
