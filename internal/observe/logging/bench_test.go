package logging_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/siteswarm/eventplatform/internal/observe/logging"
)

// BenchmarkRecord is the cost of one info record with the standard event
// fields on the context, as a function logs it: the JSON handler (Lambda)
// and the terminal handler (make dev).
func BenchmarkRecord(b *testing.B) {
	for _, f := range []struct {
		name   string
		format logging.Format
	}{{"json", logging.JSON}, {"pretty", logging.Pretty}} {
		b.Run(f.name, func(b *testing.B) {
			log := logging.New(io.Discard, logging.Options{Format: f.format, Service: "ingest", Level: slog.LevelInfo})
			ctx := logging.WithEvent(lambdaCtx(), logging.Event{ID: "evt_1PzB7sLkdIwHu7ixQm3nT0aX", TenantID: "acme", Topic: "billing.events", Source: "stripe"})
			b.ReportAllocs()
			for b.Loop() {
				log.InfoContext(ctx, "ingest: enqueued", "topics", []string{"billing.events"}, "durationMs", 7)
			}
		})
	}
	b.Run("below-level", func(b *testing.B) {
		log := logging.New(io.Discard, logging.Options{Level: slog.LevelInfo})
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			log.DebugContext(ctx, "dropped", "k", 1)
		}
	})
}
