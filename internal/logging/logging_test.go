package logging_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/logging"
)

func TestContextAttributes(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := logging.New(&buf, logging.Options{Level: slog.LevelInfo, Service: "ingest"})
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-1"})
	ctx = logging.With(ctx, "eventId", "evt_1")
	ctx = logging.With(ctx, "topic", "billing.events")
	log.InfoContext(ctx, "hello", "tenantId", "acme")
	log.DebugContext(ctx, "hidden")

	var rec map[string]any
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &rec), "one JSON line: %s", buf.String())
	require.Equal(t, "hello", rec["msg"])
	require.Equal(t, "ingest", rec["service"])
	require.Equal(t, "req-1", rec["requestId"])
	require.Equal(t, "evt_1", rec["eventId"])
	require.Equal(t, "billing.events", rec["topic"])
	require.Equal(t, "acme", rec["tenantId"])
}

func TestParseLevel(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]slog.Level{
		"TRACE": slog.LevelDebug, "debug": slog.LevelDebug, "INFO": slog.LevelInfo, "": slog.LevelInfo,
		"WARN": slog.LevelWarn, "ERROR": slog.LevelError, "FATAL": slog.LevelError, "nonsense": slog.LevelInfo,
	} {
		require.Equal(t, want, logging.ParseLevel(in), in)
	}
}
