package costmodel_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/observe/costmodel"
)

// The peer architecture's units follow from its calls: one PutEvents
// entry per 64 KiB, per subscriber EventBridge's SendMessage to the
// target queue plus a batch's share of a receive and a delete, two
// idempotency writes per KB started, one front invocation plus a batch's
// share of a consumer's.
func TestPeerUnits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		peer costmodel.Peer
		want costmodel.Units
	}{
		{"stripe webhook, one subscriber, batch 1",
			costmodel.Peer{Subscribers: 1, EventBytes: 5 << 10, ViaAPI: true, BatchSize: 1, IdempotencyItemBytes: 300},
			costmodel.Units{EventBridgeEvents: 1, SQSRequests: 3, WRU: 2, LambdaInvocations: 2, APIRequests: 1}},
		{"internal publish, two subscribers, batch 10",
			costmodel.Peer{Subscribers: 2, EventBytes: 1 << 10, BatchSize: 10, IdempotencyItemBytes: 300},
			costmodel.Units{EventBridgeEvents: 1, SQSRequests: 2 * 1.2, WRU: 4, LambdaInvocations: 1.2}},
		{"a 100 KiB event, an idempotency record over 1 KB",
			costmodel.Peer{Subscribers: 1, EventBytes: 100 << 10, BatchSize: 5, IdempotencyItemBytes: 1500},
			costmodel.Units{EventBridgeEvents: 2, SQSRequests: 2.4, WRU: 4, LambdaInvocations: 1.2}},
		{"compute, logs and traces as given",
			costmodel.Peer{Subscribers: 2, EventBytes: 100, BatchSize: 1, IdempotencyItemBytes: 100,
				GBSeconds: 0.014, LogBytes: 300, TraceShare: 0.05},
			costmodel.Units{EventBridgeEvents: 1, SQSRequests: 6, WRU: 4, LambdaInvocations: 3,
				LambdaGBSeconds: 0.014, LogBytes: 300, Traces: 0.05}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := tc.peer.Units()
			require.InDelta(t, tc.want.EventBridgeEvents, got.EventBridgeEvents, 1e-9)
			require.InDelta(t, tc.want.SQSRequests, got.SQSRequests, 1e-9)
			require.InDelta(t, tc.want.WRU, got.WRU, 1e-9)
			require.InDelta(t, tc.want.LambdaInvocations, got.LambdaInvocations, 1e-9)
			require.InDelta(t, tc.want.LambdaGBSeconds, got.LambdaGBSeconds, 1e-9)
			require.InDelta(t, tc.want.APIRequests, got.APIRequests, 1e-9)
			require.InDelta(t, tc.want.LogBytes, got.LogBytes, 1e-9)
			require.InDelta(t, tc.want.Traces, got.Traces, 1e-9)
		})
	}
	// Priced: the EventBridge line is the event put.
	u := costmodel.Peer{Subscribers: 1, EventBytes: 5 << 10, ViaAPI: true, BatchSize: 1, IdempotencyItemBytes: 300}.Units()
	require.InDelta(t, 1.00+3*0.40+2*0.625+2*0.20+1.00, costmodel.USEast1.Total(u)*1e6, 1e-6)
}

// The peer's own compute: its front function waits for one PutEvents and
// its CPU, each consumer message for the idempotency put and update and
// its CPU, a batch's messages one after another, each billed rounded up
// to the millisecond at its memory.
func TestPeerCompute(t *testing.T) {
	t.Parallel()
	cpu := costmodel.InRegion.CPUWall(256, 500*time.Microsecond) // 3.455 ms
	front := costmodel.LambdaGBSeconds(256, math.Ceil(20+ms(cpu)))
	consumer := costmodel.LambdaGBSeconds(256, math.Ceil(8+8+ms(cpu)))
	got := costmodel.PeerCompute(costmodel.InRegion, 256, 500*time.Microsecond, 256, 500*time.Microsecond, 1, 1)
	require.InDelta(t, front+consumer, got, 1e-12)
	batched := costmodel.LambdaGBSeconds(256, math.Ceil(5*(8+8+ms(cpu))))
	got = costmodel.PeerCompute(costmodel.InRegion, 256, 500*time.Microsecond, 256, 500*time.Microsecond, 2, 5)
	require.InDelta(t, front+2*batched/5, got, 1e-12)
}

// A peer on FIFO queues pays SQS's FIFO price for the same requests, and
// its idempotency records are stored for as long as they are kept.
func TestPeerFIFOAndStorage(t *testing.T) {
	t.Parallel()
	p := costmodel.Peer{Subscribers: 1, EventBytes: 5 << 10, ViaAPI: true, BatchSize: 1, IdempotencyItemBytes: 300, FIFO: true, IdempotencyKeptHours: 1,
		EMFBytes: 400, DataOutBytes: 5000}
	u := p.Units()
	require.Zero(t, u.SQSRequests)
	require.InDelta(t, 3, u.SQSFIFORequests, 1e-9)
	require.InDelta(t, 400.0/(1<<30)/730, u.StorageGBMonths, 1e-18, "300 bytes + 100 of overhead, an hour of a 730-hour month")
	require.InDelta(t, 400, u.EMFBytes, 1e-9)
	require.InDelta(t, 5000, u.DataOutBytes, 1e-9)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
