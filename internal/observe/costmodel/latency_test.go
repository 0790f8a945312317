package costmodel_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/afterward"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/observe/costmodel"
)

// Work an invocation does after its answer (afterward.Go) is billed to it,
// but its caller waits only for the answer.
func TestComputeBillsWorkAfterTheAnswer(t *testing.T) {
	t.Parallel()
	k, env := newCallKit(t)
	fns := lambdalocal.NewFunctions()
	fns.Register("callee", func(ctx context.Context, _ json.RawMessage) (string, error) {
		ctx, end := k.meter.Begin(ctx, "ingest")
		defer end(0)
		tasks := afterward.New()
		ctx = afterward.With(ctx, tasks)
		k.get(t, ctx) // 10, answered after it
		afterward.Go(ctx, func(ctx context.Context) {
			k.get(t, ctx) // after the answer: 20 more billed
			k.get(t, ctx)
		})
		tasks.Wait()
		return "ok", nil
	})
	lc := env.ServeFunctions(fns, func(o *lambda.Options) { o.APIOptions = append(o.APIOptions, k.meter.APIOption) })
	ctx, end := k.meter.Begin(context.Background(), "webhook-stripe")
	_, err := lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("callee")}) // 3 + 10
	require.NoError(t, err)
	end(0)

	got := map[string]costmodel.RoleCompute{}
	for _, c := range k.meter.Compute(model, nil) {
		got[c.Role] = c
	}
	require.InDelta(t, 10, got["ingest"].AnswerMs, 1e-9)
	require.InDelta(t, 30, got["ingest"].BilledMs, 1e-9, "the work after the answer is billed")
	require.InDelta(t, 13, got["webhook-stripe"].BilledMs, 1e-9, "the caller waits for the answer only")

	lat := costmodel.LatencyModel{
		Service: map[string]costmodel.Hop{"DynamoDB": {P50: 10 * time.Millisecond, P99: 10 * time.Millisecond}},
		Invoke:  costmodel.Hop{P50: 3 * time.Millisecond, P99: 3 * time.Millisecond}, Gateway: costmodel.Hop{P50: 5 * time.Millisecond, P99: 5 * time.Millisecond},
		FullCPUMemoryMB: 1769,
	}
	a := k.meter.AnswerLatency(lat, nil, "webhook-stripe", true)
	require.Equal(t, 1, a.Requests)
	require.Equal(t, 18*time.Millisecond, a.P50, "gateway 5 + invoke 3 + the callee's one call before its answer 10")
	require.Equal(t, 18*time.Millisecond, a.P99)
	require.Equal(t, map[string]float64{"APIGateway.HTTP": 1, "Lambda.Invoke": 1, "DynamoDB.GetItem": 1, "CPU webhook-stripe": 1, "CPU ingest": 1}, a.Path)
}

// Each hop is log-normal with its stated median and 99th percentile; the
// answer of one call is that hop's distribution, and the figures are the
// same on every run of the same calls.
func TestAnswerLatencyDrawsEachHopsDistribution(t *testing.T) {
	t.Parallel()
	k, _ := newCallKit(t)
	ctx, end := k.meter.Begin(context.Background(), "consumer-http")
	k.get(t, ctx)
	end(0)
	lat := costmodel.LatencyModel{
		Call:            map[string]costmodel.Hop{"DynamoDB.GetItem": {P50: 10 * time.Millisecond, P99: 40 * time.Millisecond}},
		FullCPUMemoryMB: 1769,
	}
	a := k.meter.AnswerLatency(lat, map[string]time.Duration{"consumer-http": time.Millisecond}, "consumer-http", false)
	cpu := costmodel.InRegion.CPUWall(256, time.Millisecond)
	require.InDelta(t, float64(10*time.Millisecond+cpu), float64(a.P50), float64(400*time.Microsecond))
	require.InDelta(t, float64(40*time.Millisecond+cpu), float64(a.P99), float64(3*time.Millisecond))
	require.Equal(t, a, k.meter.AnswerLatency(lat, map[string]time.Duration{"consumer-http": time.Millisecond}, "consumer-http", false), "the same figures every time")
	require.Zero(t, k.meter.AnswerLatency(lat, nil, "ingest", false).Requests, "no invocation of that role")
}

// Every hop of the published model states its source.
func TestEveryHopIsSourced(t *testing.T) {
	t.Parallel()
	m := costmodel.InRegionLatency
	hops := []costmodel.Hop{m.Default, m.Invoke, m.Gateway}
	for _, h := range m.Call {
		hops = append(hops, h)
	}
	for _, h := range m.Service {
		hops = append(hops, h)
	}
	for _, h := range hops {
		require.NotEmpty(t, h.Source)
		require.Positive(t, h.P50)
		require.GreaterOrEqual(t, h.P99, h.P50)
	}
}
