package devstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/smithy-go/middleware"
	stripewebhook "github.com/stripe/stripe-go/v76/webhook"

	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// BenchmarkStripeEventToDelivery measures the local stack end to end, one
// event at a time: a signed Stripe event POSTed to /webhook/stripe until
// the HTTP consumer's delivery reaches the local subscriber sink (webhook →
// ingest → SQS → poller → consumer → HTTP). aws-calls/event counts every
// AWS API call the functions made per event except the pollers'
// ReceiveMessage, which runs on a clock, not per event; p50/p99 are the
// end-to-end latencies a developer sees locally.
func BenchmarkStripeEventToDelivery(b *testing.B) {
	calls := awslocal.NewCalls()
	st, err := devstack.Start(context.Background(), devstack.Options{
		Addr: "127.0.0.1:0", Prefix: awslocal.NewPrefix(), Log: logging.Discard(), Env: envconf.FromMap(nil),
		Settings:   map[string]string{devstack.SettingSweepEvery: "1h"},
		APIOptions: []func(*middleware.Stack) error{calls.APIOption},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	sample, err := os.ReadFile("../../../events/stripe/invoice.paid.json")
	if err != nil {
		b.Fatal(err)
	}
	var ev map[string]any
	if err := json.Unmarshal(sample, &ev); err != nil {
		b.Fatal(err)
	}

	lat := make([]time.Duration, 0, b.N)
	calls.Reset()
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprintf("evt_bench_%d_%d", time.Now().UnixNano(), i)
		ev["id"] = id
		body, _ := json.Marshal(ev)
		signed := stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{Payload: body, Secret: devstack.DefaultStripeSecret, Timestamp: time.Now()})
		req, _ := http.NewRequest(http.MethodPost, st.URL()+"/webhook/stripe", bytes.NewReader(body))
		req.Header.Set("Stripe-Signature", signed.Header)
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("webhook: %v %v", err, resp)
		}
		resp.Body.Close()
		for !deliveredOnce(st, id) {
			if time.Since(start) > 30*time.Second {
				b.Fatalf("%s was not delivered", id)
			}
			time.Sleep(200 * time.Microsecond)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	n := 0
	for op, c := range calls.Snapshot() {
		if !strings.HasSuffix(op, ".ReceiveMessage") {
			n += c
		}
	}
	b.ReportMetric(float64(n)/float64(len(lat)), "aws-calls/event")
	b.ReportMetric(msOf(pctl(lat, 50)), "p50-ms")
	b.ReportMetric(msOf(pctl(lat, 99)), "p99-ms")
}

func deliveredOnce(st *devstack.Stack, id string) bool {
	for _, d := range st.Sink.Deliveries(topology.Billing) {
		if d.EventID == id && d.Delivered() {
			return true
		}
	}
	return false
}

func pctl(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
