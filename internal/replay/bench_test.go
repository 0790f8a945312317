package replay_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/siteswarm/eventplatform/internal/replay"
)

// BenchmarkReplayOne replays one open incident (small payload): ns/op is
// the replay-one step the state machine's Map runs per incident.
// aws-calls/incident counts its AWS calls: the incident read, the dispatch
// row read, the optimistic read-and-write to retrying, the row reset and the
// send.
func BenchmarkReplayOne(b *testing.B) {
	p := setupPlatform(b)
	ctx := context.Background()
	calls, n := 0, 0
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		inc := p.seed(b, fmt.Sprintf("evt_bench_%d", i), "acme", t0)
		p.env.Calls.Reset()
		b.StartTimer()
		o := p.replay.ReplayOne(ctx, replay.Request{Actor: "bench"}, inc.ID)
		b.StopTimer()
		if o.Result != replay.ResultReplayed {
			b.Fatalf("replay: %+v", o)
		}
		calls += p.env.Calls.Total()
		n++
		b.StartTimer()
	}
	b.ReportMetric(float64(calls)/float64(n), "aws-calls/incident")
}
