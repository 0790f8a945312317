package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/replay"
)

// stateLimit is Step Functions' limit on a state's input or output; the
// state machine carries the running summary from page to page, and from
// one execution to the next.
const stateLimit = 256 * 1024

// A bulk replay of MaxBulkLimit incidents folded page by page, as the state
// machine does, keeps exact counts while its summary stays a small
// fraction of a Step Functions state, even when every listed error quotes
// a long response.
func TestSummaryStaysSmallAtBulkScale(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("upstream said: é", 200) // multi-byte, far past the clip
	var totals *replay.Summary
	largest := 0
	for page := range replay.MaxBulkLimit / replay.DefaultPageSize {
		outcomes := make([]replay.Outcome, replay.DefaultPageSize)
		for i := range outcomes {
			id := fmt.Sprintf("inc_%032x", page*replay.DefaultPageSize+i)
			switch i % 4 {
			case 0, 1:
				outcomes[i] = replay.Outcome{IncidentID: id, Result: replay.ResultReplayed}
			case 2:
				outcomes[i] = replay.Outcome{IncidentID: id, Result: replay.ResultSkipped, Reason: replay.SkipStatus, Detail: long}
			default:
				outcomes[i] = replay.Outcome{IncidentID: id, Result: replay.ResultError, Error: long}
			}
		}
		// Through JSON, as each page crosses the state machine.
		raw, err := json.Marshal(replay.Summarize(totals, (page+1)*replay.DefaultPageSize, outcomes, false))
		require.NoError(t, err)
		largest = max(largest, len(raw))
		totals = new(replay.Summary)
		require.NoError(t, json.Unmarshal(raw, totals))
	}
	t.Logf("largest summary: %d bytes (state limit %d)", largest, stateLimit)
	require.Less(t, largest, stateLimit/2, "the summary must leave room for the request and a page of results")
	require.Equal(t, replay.MaxBulkLimit, totals.Selected)
	require.Equal(t, replay.MaxBulkLimit/2, totals.ReplayedCount)
	require.Equal(t, replay.MaxBulkLimit/4, totals.SkippedCount)
	require.Equal(t, map[string]int{replay.SkipStatus: replay.MaxBulkLimit / 4}, totals.SkippedByReason)
	require.Equal(t, replay.MaxBulkLimit/4, totals.ErrorCount)
	require.Len(t, totals.Replayed, replay.MaxListed)
	require.Len(t, totals.Skipped, replay.MaxListed)
	require.Len(t, totals.Errors, replay.MaxListed)
	require.Equal(t, "inc_"+strings.Repeat("0", 32), totals.Replayed[0], "the first ones are listed")
	require.True(t, strings.HasSuffix(totals.Errors[0].Error, "…"), "long errors are clipped")
}

// A filter may select up to MaxBulkLimit incidents page by page; one call
// replays at most MaxLimit and says how to run more, while a dry run of a
// bulk selection still counts it in one call.
func TestBulkLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := setupPlatform(t)
	p.seed(t, "evt_bulk_1", "acme", t0)

	_, err := p.replay.Select(ctx, replay.Request{Topic: topic, Limit: replay.MaxBulkLimit + 1}, "", 0)
	var bad *replay.RequestError
	require.ErrorAs(t, err, &bad)
	require.Equal(t, replay.CodeInvalidRequest, bad.Code)

	page, err := p.replay.Select(ctx, replay.Request{Topic: topic, Limit: replay.MaxBulkLimit}, "", 0)
	require.NoError(t, err)
	require.Len(t, page.IncidentIDs, 1)

	_, err = p.replay.Replay(ctx, replay.Request{Topic: topic, Limit: replay.MaxLimit + 1})
	require.ErrorAs(t, err, &bad)
	require.Equal(t, replay.CodeTooLargeForOneCall, bad.Code)

	sum, err := p.replay.Replay(ctx, replay.Request{Topic: topic, Limit: replay.MaxBulkLimit, DryRun: true})
	require.NoError(t, err)
	require.Equal(t, 1, sum.Selected)
	require.Equal(t, 1, sum.ReplayedCount)
}
