package metric_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/observe/metric"
)

func TestEmitWritesEMF(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	e := &metric.Emitter{W: &buf, Dimensions: map[string]string{"Stage": "dev"}, Now: func() time.Time { return time.UnixMilli(1700000000000) }}
	e.Emit(map[string]string{"Topic": "billing.events"},
		metric.Metric{Name: "Processed", Unit: metric.Count, Value: 3},
		metric.Metric{Name: "HandlerDuration", Unit: metric.Milliseconds, Value: 12.5})
	e.Emit(nil) // no metrics: nothing written

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 1)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &got))
	require.Equal(t, "billing.events", got["Topic"])
	require.Equal(t, "dev", got["Stage"])
	require.Equal(t, 3.0, got["Processed"])
	require.Equal(t, 12.5, got["HandlerDuration"])
	meta := got["_aws"].(map[string]any)
	require.Equal(t, 1700000000000.0, meta["Timestamp"])
	dir := meta["CloudWatchMetrics"].([]any)[0].(map[string]any)
	require.Equal(t, metric.DefaultNamespace, dir["Namespace"])
	require.Equal(t, []any{[]any{"Stage", "Topic"}}, dir["Dimensions"])
	require.Equal(t, []any{
		map[string]any{"Name": "Processed", "Unit": "Count"},
		map[string]any{"Name": "HandlerDuration", "Unit": "Milliseconds"},
	}, dir["Metrics"])
}

func TestForStage(t *testing.T) {
	t.Parallel()
	require.Equal(t, map[string]string{metric.DimensionStage: "evp-prod"}, metric.ForStage("evp-prod").Dimensions)
	require.Empty(t, metric.ForStage("").Dimensions, "the local stack has no stage dimension")
}
