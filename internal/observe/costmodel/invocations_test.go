package costmodel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime/pprof"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/observe/costmodel"
)

// model prices every DynamoDB call at 10 ms and a Lambda Invoke at 3 ms
// plus its callee, with no CPU: the waits are exact.
var model = costmodel.DurationModel{
	Service: map[string]time.Duration{"DynamoDB": 10 * time.Millisecond}, Default: time.Second,
	InvokeOverhead: 3 * time.Millisecond, FullCPUMemoryMB: 1769,
}

type callKit struct {
	meter *costmodel.Meter
	ddb   *dynamodb.Client
	table string
}

func newCallKit(t *testing.T) (*callKit, *awslocaltest.Env) {
	env := awslocaltest.NewEnv(t)
	m := costmodel.NewMeter(nil, env.Prefix)
	return &callKit{
		meter: m,
		ddb: awslocal.NewDynamoDBClient(env.Emulators.Config(), env.Emulators.DynamoDBEndpoint, func(o *dynamodb.Options) {
			o.APIOptions = append(o.APIOptions, m.APIOption)
		}),
		table: env.Resources.EventsTable,
	}, env
}

// get is one DynamoDB call (an item that is not there).
func (k *callKit) get(t *testing.T, ctx context.Context) {
	_, err := k.ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(k.table), Key: map[string]ddbtypes.AttributeValue{
		"pk": &ddbtypes.AttributeValueMemberS{Value: "none"}, "sk": &ddbtypes.AttributeValueMemberS{Value: "none"},
	}})
	if err != nil {
		t.Error(err)
	}
}

// An invocation waits for its own calls in turn and, between two of them,
// for the longest of the goroutines it fanned out to; a synchronous Lambda
// Invoke waits for its callee's billed duration. Calls made without the
// invocation's context are not its.
func TestComputeFollowsTheCriticalPath(t *testing.T) {
	t.Parallel()
	k, env := newCallKit(t)
	fns := lambdalocal.NewFunctions()
	fns.Register("callee", func(ctx context.Context, _ json.RawMessage) (string, error) {
		ctx, end := k.meter.Begin(ctx, "ingest")
		defer end(0)
		k.get(t, ctx)
		k.get(t, ctx)
		return "ok", nil
	})
	lc := env.ServeFunctions(fns, func(o *lambda.Options) { o.APIOptions = append(o.APIOptions, k.meter.APIOption) })

	ctx, end := k.meter.Begin(context.Background(), "webhook-stripe")
	k.get(t, ctx) // 10
	var wg sync.WaitGroup
	for lane := range 3 { // side by side: the longest (3 calls) counts, 30
		wg.Go(func() {
			for range lane + 1 {
				k.get(t, ctx)
			}
		})
	}
	wg.Wait()
	k.get(t, context.Background())                                                    // not the invocation's
	_, err := lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("callee")}) // 3 + 20
	require.NoError(t, err)
	wg.Go(func() { k.get(t, ctx) }) // a second fan-out, after the invoke: 10
	wg.Wait()
	end(0)

	got := map[string]costmodel.RoleCompute{}
	for _, c := range k.meter.Compute(model, nil) {
		got[c.Role] = c
	}
	require.Len(t, got, 2)
	require.Equal(t, 2, got["ingest"].Calls)
	require.InDelta(t, 20, got["ingest"].WaitMs, 1e-9)
	require.Equal(t, 1+6+1+1, got["webhook-stripe"].Calls)
	require.InDelta(t, 10+30+3+20+10, got["webhook-stripe"].WaitMs, 1e-9)
	require.InDelta(t, 73, got["webhook-stripe"].BilledMs, 1e-9)
	require.InDelta(t, costmodel.LambdaGBSeconds(256, 73), got["webhook-stripe"].GBSeconds, 1e-12)
}

// A role's CPU per invocation is stretched to its memory's share of a
// vCPU and added to its wait; a profile's CPU is averaged over the role's
// invocations.
func TestComputeAddsCPU(t *testing.T) {
	t.Parallel()
	k, _ := newCallKit(t)
	for range 2 {
		ctx, end := k.meter.Begin(context.Background(), "consumer-http")
		k.get(t, ctx)
		k.get(t, ctx)
		end(0)
	}
	ctx, end := k.meter.Begin(context.Background(), "ingest")
	k.get(t, ctx)
	end(0)
	got := k.meter.Compute(model, map[string]time.Duration{"consumer-http": 4 * time.Millisecond})
	require.Len(t, got, 2)
	require.Equal(t, "consumer-http", got[0].Role)
	cpu := float64(model.CPUWall(256, 4*time.Millisecond)) / float64(time.Millisecond) // 27.64 per invocation
	require.InDelta(t, 2*cpu, got[0].CPUMs, 1e-6)
	require.InDelta(t, 2*48, got[0].BilledMs, 1e-9, "20 ms of calls + 27.64 of CPU, rounded up")
	require.InDelta(t, 4, got[0].PricedCPUMs, 1e-9)
	require.InDelta(t, 10, got[1].BilledMs, 1e-9, "no CPU given")

	// Invocations are numbered from 1 in the order they began.
	profile := map[string]time.Duration{"1": 3 * time.Millisecond, "2": 5 * time.Millisecond, "3": 2 * time.Millisecond, "99": time.Hour}
	require.Equal(t, 4*time.Millisecond, got[0].MeanCPU(profile))
	require.Equal(t, 2*time.Millisecond, got[1].MeanCPU(profile))
}

// ProfileCPU counts what a labelled invocation's goroutines ran, not the
// meter's own work inside it nor unlabelled goroutines.
func TestProfileCPU(t *testing.T) {
	// Not parallel: one CPU profile per process.
	var buf bytes.Buffer
	require.NoError(t, pprof.StartCPUProfile(&buf))
	spin := func(d time.Duration) {
		for start := time.Now(); time.Since(start) < d; {
		}
	}
	pprof.Do(context.Background(), pprof.Labels(costmodel.LabelInvocation, "7"), func(ctx context.Context) {
		done := make(chan struct{})
		go func() { spin(150 * time.Millisecond); close(done) }() // inherits the label
		spin(150 * time.Millisecond)
		<-done
		pprof.Do(ctx, pprof.Labels(costmodel.LabelMeter, "peek"), func(context.Context) { spin(100 * time.Millisecond) })
	})
	pprof.Do(context.Background(), pprof.Labels(costmodel.LabelInvocation, "8", costmodel.LabelMeter, "peek"), func(context.Context) {
		spin(100 * time.Millisecond)
	})
	spin(100 * time.Millisecond)
	pprof.StopCPUProfile()
	got, err := costmodel.ProfileCPU(&buf)
	require.NoError(t, err)
	require.Positive(t, got["7"], "the invocation and the goroutine it started")
	require.NotContains(t, got, "8", "the meter's work")
	require.Len(t, got, 1, "unlabelled goroutines are no invocation's")
}
