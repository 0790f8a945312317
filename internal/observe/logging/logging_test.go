package logging_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/observe/logging"
)

func TestParseLevel(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]slog.Level{
		"TRACE": slog.LevelDebug, "debug": slog.LevelDebug, " INFO ": slog.LevelInfo,
		"WARN": slog.LevelWarn, "warning": slog.LevelWarn, "ERROR": slog.LevelError,
		"FATAL": slog.LevelError, "": slog.LevelInfo, "bogus": slog.LevelInfo,
	} {
		require.Equal(t, want, logging.ParseLevel(in), in)
	}
}

func TestLevelFromEnv(t *testing.T) {
	t.Setenv("AWS_LAMBDA_LOG_LEVEL", "")
	t.Setenv("LOG_LEVEL", "error")
	require.Equal(t, slog.LevelError, logging.LevelFromEnv(), "LOG_LEVEL is the fallback")
	t.Setenv("AWS_LAMBDA_LOG_LEVEL", "DEBUG")
	require.Equal(t, slog.LevelDebug, logging.LevelFromEnv(), "Lambda's setting wins")
}

// lambdaCtx is what the Lambda Go runtime hands a handler.
func lambdaCtx() context.Context {
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-1"})
	//nolint:staticcheck // the runtime's own plain string key
	return context.WithValue(ctx, "x-amzn-trace-id", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
}

func TestJSONRecordsCarryRequestTraceAndEventFields(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := logging.New(&buf, logging.Options{Service: "ingest", Level: slog.LevelInfo})
	ctx := logging.WithEvent(lambdaCtx(), logging.Event{ID: "evt_1", TenantID: "acme", Source: "stripe"})
	ctx = logging.WithEvent(ctx, logging.Event{Topic: "billing.events", TenantID: "acme2"})
	log.InfoContext(ctx, "ingest: enqueued", "topics", []string{"billing.events"})
	log.DebugContext(ctx, "dropped below the level")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 1)
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &rec))
	require.Equal(t, "ingest", rec[logging.KeyService])
	require.Equal(t, "req-1", rec[logging.KeyRequestID])
	require.Equal(t, "1-5759e988-bd862e3fe1be46a994272793", rec[logging.KeyTraceID])
	require.Equal(t, "evt_1", rec[logging.KeyEventID])
	require.Equal(t, "acme2", rec[logging.KeyTenantID], "a later With replaces the key")
	require.Equal(t, "billing.events", rec[logging.KeyTopic])
	require.Equal(t, "stripe", rec[logging.KeySource])
	require.Equal(t, "INFO", rec["level"])
	require.Equal(t, 1, strings.Count(lines[0], `"tenantId"`), "no duplicate keys")
}

func TestRecordsOutsideLambdaHaveNoRequestFields(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	logging.New(&buf, logging.Options{}).Info("hello")
	var rec map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &rec))
	require.NotContains(t, rec, logging.KeyRequestID)
	require.NotContains(t, rec, logging.KeyTraceID)
}

func TestPrettyLine(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	h := logging.NewPrettyHandler(&buf, logging.PrettyOptions{Level: slog.LevelDebug})
	log := slog.New(h).With("function", "webhook-stripe").WithGroup("http").With("status", 200)
	r := slog.NewRecord(time.Date(2026, 12, 2, 12, 0, 1, 123e6, time.UTC), slog.LevelWarn, "webhook: rejected", 0)
	r.AddAttrs(slog.String("reason", "bad signature"), slog.Any("error", errors.New("no match")))
	require.NoError(t, log.Handler().Handle(context.Background(), r))
	require.Equal(t,
		`12:00:01.123 WARN  webhook-stripe         webhook: rejected http.status=200 http.reason="bad signature" http.error="no match"`+"\n",
		buf.String())
}

func TestPrettyThroughNewWithContextFields(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := logging.New(&buf, logging.Options{Format: logging.Pretty, Service: "ingest", Level: slog.LevelInfo})
	ctx := logging.WithEvent(lambdaCtx(), logging.Event{ID: "evt_1"})
	log.InfoContext(ctx, "ingest: enqueued", "topics", []string{"a", "b"}, "empty", "")
	line := buf.String()
	require.Regexp(t, `^\d\d:\d\d:\d\d\.\d{3} INFO  ingest {17}ingest: enqueued `, line)
	require.Contains(t, line, ` topics="[a b]"`)
	require.Contains(t, line, ` empty=""`)
	require.Contains(t, line, ` requestId=req-1`)
	require.Contains(t, line, ` eventId=evt_1`)
	require.NotContains(t, line, "\x1b[", "no colour unless asked")
}

func TestPrettyColorAndConcurrency(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := logging.New(&buf, logging.Options{Format: logging.Pretty, Color: true, Level: slog.LevelInfo})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				log.Error("boom", "worker", i)
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 400, "every line whole")
	for _, l := range lines {
		require.Regexp(t, "^\x1b\\[2m\\d\\d:\\d\\d:\\d\\d\\.\\d{3}\x1b\\[0m \x1b\\[31mERROR\x1b\\[0m .* \x1b\\[2mworker=\x1b\\[0m[0-7]$", l)
	}
}

func TestHooksSeeWithAttributes(t *testing.T) {
	t.Parallel()
	type key struct{}
	var mu sync.Mutex
	seen := map[string]string{}
	logging.AddHook(func(ctx context.Context, attrs []slog.Attr) {
		if ctx.Value(key{}) == nil {
			return // another test's With
		}
		mu.Lock()
		defer mu.Unlock()
		for _, a := range attrs {
			seen[a.Key] = a.Value.String()
		}
	})
	ctx := context.WithValue(context.Background(), key{}, true)
	logging.WithEvent(logging.With(ctx, "messageId", "m-1"), logging.Event{ID: "evt_1", Topic: "crm.sync"})
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, map[string]string{"messageId": "m-1", "eventId": "evt_1", "topic": "crm.sync"}, seen)
}
