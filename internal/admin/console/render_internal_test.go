package console

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A job's result is shown member by member (named in words, times in the
// console's format, nested values indented), not as one raw JSON line.
func TestResultFieldsAreReadable(t *testing.T) {
	t.Parallel()
	got := resultFields(json.RawMessage(`{"events":3,"incidents":0,"manifestKey":"jobs/job_1/manifest.json","expiresAt":"2026-12-31T10:00:00.123456Z","stores":{"ledger":2}}`))
	require.Equal(t, []resultField{
		{Name: "events", Text: "3"},
		{Name: "incidents", Text: "0"},
		{Name: "manifest key", Text: "jobs/job_1/manifest.json"},
		{Name: "expires at", Text: "2026-12-31 10:00:00Z"},
		{Name: "stores", JSON: "{\n  \"ledger\": 2\n}"},
	}, got)
	require.Equal(t, []resultField{{Name: "result", JSON: "[\n  1,\n  2\n]"}}, resultFields(json.RawMessage(`[1,2]`)))
	require.Nil(t, resultFields(nil))
}

// The incident chart's axes: a round scale up the side (at most 5 steps,
// its top at or above the peak), every 6 hours and each day's start along
// the bottom.
func TestIncidentChartAxes(t *testing.T) {
	t.Parallel()
	for peak, want := range map[int][2]int{0: {1, 1}, 3: {3, 1}, 7: {8, 2}, 23: {25, 5}, 180: {200, 50}, 999: {1000, 200}} {
		top, step := scale(peak)
		require.Equal(t, want, [2]int{top, step}, "peak %d", peak)
		require.LessOrEqual(t, top/step, 5)
	}
	since := time.Date(2026, 12, 3, 11, 0, 0, 0, time.UTC)
	c := incidentChart(since, map[time.Time]int{since.Add(5 * time.Hour): 7, since.Add(30 * time.Hour): 2})
	require.Equal(t, 9, c.Total)
	require.Equal(t, 7, c.Peak)
	require.Len(t, c.Bars, 48)
	require.Equal(t, chartTop+chartHeight-chartHeight*7/8, c.Bars[5].Y, "7 of a scale to 8")
	var labels []string
	for _, x := range c.XTicks {
		labels = append(labels, x.Label)
	}
	require.Equal(t, []string{"12:00", "18:00", "Dec 4", "06:00", "12:00", "18:00", "Dec 5", "06:00"}, labels)
	require.Len(t, c.YTicks, 5, "0, 2, 4, 6, 8")
}
