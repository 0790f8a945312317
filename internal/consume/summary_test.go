package consume_test

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/outbox"
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

// The summary line counts every outcome an invocation can end in. A
// completion carried in a copy and a copy that lands it are outcomes too
// (carry.go): an invocation holding either must still answer its batch
// and log its line. Before, summarize indexed a counter array sized to the
// outcomes it knew and panicked on them, so the invocation failed after
// the side effect and the copy were done, and SQS redelivered its whole
// batch (a landed copy panicked on every receive until SQS dead-lettered
// it with its siblings).
func TestTheSummaryCountsCarriedCompletionsAndLandedCopies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	logs := &testkit.Buffer{}
	b.rebuild(t, func(_ *consume.Config, d *consume.Deps) {
		d.Log = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	summary := func() map[string]any {
		t.Helper()
		var last map[string]any
		for _, l := range logs.JSONLines(t) {
			if l["msg"] == "consume: batch" {
				last = l
			}
		}
		require.NotNil(t, last, "the invocation logged its summary")
		return last
	}
	b.publish(t, "evt_sum", "")
	stop := b.env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "UpdateItem", Match: completionWrite})
	require.Empty(t, b.invokeWithin(t, b.receive(t, 1, 5*time.Second), 3*time.Second))
	stop()
	require.Equal(t, 1.0, summary()["carried"], "the completion went on in a copy")
	require.Equal(t, 1.0, summary()["records"])

	copies := b.receive(t, 1, 10*time.Second)
	require.Len(t, copies, 1)
	require.Empty(t, b.invoke(t, copies))
	require.Equal(t, outbox.StatusCompleted, b.row(t, "evt_sum").Status)
	require.Equal(t, 1.0, summary()["copies"], "the copy landed the completion")
	require.Equal(t, 0.0, summary()["completed"], "a copy runs no handler")
	var infos []any
	for _, l := range logs.JSONLines(t) {
		if l["level"] == "INFO" {
			infos = append(infos, l["msg"])
		}
	}
	require.Equal(t, []any{"consume: batch", "consume: batch"}, infos, "one INFO line per invocation")
}
