package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/observe/logging"
)

// Under load the local stack's log is not a line per request: 1,000
// invocations' informational lines and their access-log lines become one
// summary line a period; start-up lines, warnings and errors still print
// as they come. (A 20,000-record import printed ~60,000 lines.)
func TestSummaryCountsRequestLines(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	h, closeLog := newSummary(logging.New(&buf, logging.Options{Format: logging.JSON}).Handler(), time.Hour)
	log := slog.New(h)
	log.Info("devstack: provisioned", "function", "evp")
	ingest := log.With("function", "ingest")
	for i := range 1000 {
		ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: fmt.Sprintf("req-%d", i)})
		ingest.InfoContext(ctx, "ingest: enqueued", "eventId", fmt.Sprintf("evt_%d", i))
		log.Info("http POST /2015-03-31/functions/ingest/invocations", "function", "http", "status", 200)
		log.Info(fmt.Sprintf("http GET /admin/events/evt_%d", i), "function", "http", "status", 200)
	}
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-x"})
	ingest.WarnContext(ctx, "ingest: send failed; the sweeper resends", "eventId", "evt_x")
	log.Warn("http POST /webhook/stripe", "function", "http", "status", 503)
	closeLog()

	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		lines = append(lines, m)
	}
	require.Len(t, lines, 4, buf.String())
	require.Equal(t, "devstack: provisioned", lines[0]["msg"])
	require.Equal(t, "ingest: send failed; the sweeper resends", lines[1]["msg"], "a warning prints at once")
	require.Equal(t, "req-x", lines[1]["requestId"])
	require.Equal(t, "http POST /webhook/stripe", lines[2]["msg"])
	require.Equal(t, "devstack", lines[3]["function"])
	require.Equal(t, "last 1h0m0s: 1000× [http] GET /admin/…, 1000× [http] POST /2015-03-31/…, 1000× [ingest] ingest: enqueued", lines[3]["msg"])
}

// --log-summary 0 and DEBUG print a line per request.
func TestDevLoggerEveryLineOnRequest(t *testing.T) {
	t.Parallel()
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-1"})
	for _, c := range []struct {
		level   string
		summary time.Duration
		want    string
	}{
		{"", 0, `"msg":"ingest: enqueued"`},
		{"DEBUG", time.Hour, `"msg":"ingest: enqueued"`},
		{"", time.Hour, `"msg":"last 1h0m0s: 2× [ingest] ingest: enqueued"`}, // after the note saying lines are summarized
	} {
		var buf bytes.Buffer
		log, closeLog := devLogger(&buf, true, c.level, c.summary)
		log.InfoContext(ctx, "ingest: enqueued", "function", "ingest")
		log.InfoContext(ctx, "ingest: enqueued", "function", "ingest")
		closeLog()
		require.Equal(t, 2, strings.Count(buf.String(), "\n"), "%+v: %s", c, buf.String())
		require.Contains(t, buf.String(), c.want)
	}
}
