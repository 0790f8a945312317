package ingest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/wire/wiretest"
)

// BenchmarkIngestRateAsTablesGrow publishes EVP_RATE_EVENTS events
// (default 5,000; 2,000 on the embedded emulator, which would take minutes
// more) through ingest with 16 concurrent callers on each DynamoDB
// emulator and reports the publish rate over the first and the last 1,000
// events: a flat rate (last/first near 1) is what a developer's stack
// left running for a day needs. The embedded emulator's transactions slow
// down linearly with table size; DynamoDB Local's do not.
func BenchmarkIngestRateAsTablesGrow(b *testing.B) {
	const window, callers = 1000, 16
	for _, kind := range []string{awslocal.DynamoEmbedded, awslocal.DynamoLocal} {
		b.Run(kind, func(b *testing.B) {
			n := 5000
			if kind == awslocal.DynamoEmbedded {
				n = 2000
			}
			if v := os.Getenv("EVP_RATE_EVENTS"); v != "" {
				n, _ = strconv.Atoi(v)
			}
			var emu *awslocal.Emulators
			if kind == awslocal.DynamoLocal {
				emu = awslocaltest.SharedDynamoDBLocal(b)
			} else {
				emu = awslocaltest.Shared(b)
			}
			var first, last time.Duration
			for b.Loop() {
				env := awslocaltest.NewEnv(b, awslocaltest.WithEmulators(emu))
				svc := wiretest.Ingest(b, env, wiretest.Opts{})
				done := make([]time.Time, n)
				var next atomic.Int64
				var wg sync.WaitGroup
				start := time.Now()
				for range callers {
					wg.Go(func() {
						for {
							i := int(next.Add(1)) - 1
							if i >= n {
								return
							}
							raw, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("inq_rate_%d", i), "tenantId": "acme", "type": "inquiry.created",
								"source": "storefront", "timestamp": time.Now().UTC().Format(time.RFC3339Nano), "payload": map[string]any{"n": i}})
							res, err := svc.Publish(context.Background(), raw)
							if err != nil || res.Status != envelope.StatusEnqueued {
								b.Errorf("publish %d: %v %v", i, res.Status, err)
								return
							}
							done[i] = time.Now()
						}
					})
				}
				wg.Wait()
				first = done[min(window, n)-1].Sub(start)
				last = done[n-1].Sub(done[max(0, n-window-1)])
			}
			w := float64(min(window, n))
			b.ReportMetric(float64(n), "events")
			b.ReportMetric(w/first.Seconds(), "first-1k-per-s")
			b.ReportMetric(w/last.Seconds(), "last-1k-per-s")
			b.ReportMetric(first.Seconds()/last.Seconds(), "last/first")
			b.ReportMetric(0, "ns/op")
		})
	}
}
