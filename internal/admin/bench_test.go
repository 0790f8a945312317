package admin_test

import (
	"net/http"
	"slices"
	"testing"
	"time"
)

// BenchmarkAdminRequest measures the admin routes operators poll, against
// the emulators: AWS API calls per request (what each costs in AWS) and
// latency. The event view reads the event's item collection and each
// topic's incident; the listing queries one index partition per status;
// health probes both tables and every queue and DLQ.
func BenchmarkAdminRequest(b *testing.B) {
	bd := setup(b)
	bd.publish(b, "evt_bench", "inquiry.created", "storefront", "acme")
	inc := bd.deadLetter(b, "acme/evt_bench", "crm.sync") // an internal event's key is scoped by tenant
	for _, r := range []struct{ name, path string }{
		{"event-view-2-topics", "/admin/events/evt_bench?tenant=acme"},
		{"incident-view", "/admin/incidents/" + inc.ID},
		{"incidents-list-open", "/admin/incidents?status=open"},
		{"health", "/admin/health"},
	} {
		b.Run(r.name, func(b *testing.B) {
			bd.env.Calls.Reset()
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				if a := bd.get(b, r.path); a.Status != http.StatusOK {
					b.Fatalf("%s: %d %v", r.path, a.Status, a.Body)
				}
				lat = append(lat, time.Since(start))
			}
			b.ReportMetric(float64(bd.env.Calls.Total())/float64(len(lat)), "aws-calls/request")
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2])/float64(time.Millisecond), "p50-ms")
		})
	}
}
