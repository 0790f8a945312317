package lambdaesm_test

import (
	"context"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/lambdaesm"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/subscriberhealth"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// bundle is a topic's queue feeding a local consumer through an event
// source mapping that the local Lambda API serves to the SDK's client.
type bundle struct {
	env      *awslocaltest.Env
	queue    awslocal.Queue
	client   *lambda.Client
	mappings *lambdaesm.Mappings
	// running counts the consumer's invocations in progress, peak the
	// most at once, got the messages it took.
	running, peak atomic.Int32
	mu            sync.Mutex
	got           []string
}

func setup(t *testing.T) *bundle {
	t.Helper()
	env := awslocaltest.NewEnv(t)
	b := &bundle{env: env, queue: env.Queue(topology.CRM)}
	fns := lambdalocal.NewFunctions()
	fns.Register("consumer-crm", func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		n := b.running.Add(1)
		defer b.running.Add(-1)
		for p := b.peak.Load(); n > p && !b.peak.CompareAndSwap(p, n); p = b.peak.Load() {
		}
		time.Sleep(200 * time.Millisecond)
		b.mu.Lock()
		for _, r := range ev.Records {
			b.got = append(b.got, r.Body)
		}
		b.mu.Unlock()
		return events.SQSEventResponse{}, nil
	})
	tr := &lambdalocal.Triggers{Functions: fns, SQS: env.SQS}
	t.Cleanup(tr.Stop)
	require.NoError(t, tr.StartQueueSource("consumer-crm", lambdalocal.QueueSource{QueueURL: b.queue.URL, QueueARN: b.queue.ARN, BatchSize: 1, MaxConcurrency: 6}))
	// Another function's mapping of the same queue is not the topic's.
	require.NoError(t, tr.StartQueueSource("someone-else", lambdalocal.QueueSource{QueueURL: env.Queue(topology.Billing).URL, QueueARN: env.Queue(topology.Billing).ARN}))
	srv := httptest.NewServer(tr)
	t.Cleanup(srv.Close)
	b.client = awslocal.NewLambdaClient(env.Config(), srv.URL)
	b.mappings = &lambdaesm.Mappings{Client: b.client, Sources: map[string]lambdaesm.Source{
		topology.CRM: {Function: "consumer-crm", QueueARN: b.queue.ARN},
	}}
	return b
}

func (b *bundle) send(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		_, err := b.env.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(b.queue.URL), MessageBody: aws.String("m" + strconv.Itoa(i)), MessageGroupId: aws.String("acme")})
		require.NoError(t, err)
	}
}

func (b *bundle) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.got)
}

// A mapping reads back as declared (enabled, its maximum concurrency); a
// disabled mapping receives nothing: the queue keeps the messages and
// none is received (so none counts toward maxReceiveCount); enabled again
// at a maximum concurrency of 2, the consumer runs at most 2 invocations at
// once and gets every message.
func TestADisabledMappingLeavesTheQueueAlone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	got, err := b.mappings.Mapping(ctx, topology.CRM)
	require.NoError(t, err)
	require.Equal(t, subscriberhealth.Mapping{Enabled: true, MaxConcurrency: 6}, got, "as created: enabled, at the maximum concurrency its source declared")

	require.NoError(t, b.mappings.Set(ctx, topology.CRM, subscriberhealth.Mapping{Enabled: false}))
	got, err = b.mappings.Mapping(ctx, topology.CRM)
	require.NoError(t, err)
	require.False(t, got.Enabled)
	time.Sleep(1500 * time.Millisecond) // pollers finish a receive begun before
	b.send(t, 12)
	time.Sleep(3 * time.Second)
	require.Zero(t, b.count(), "a disabled mapping invokes nothing")
	visible, inflight := b.env.QueueDepth(ctx, b.queue.URL)
	require.Equal(t, 12, visible, "every message waits on the queue, none received")
	require.Zero(t, inflight)

	require.NoError(t, b.mappings.Set(ctx, topology.CRM, subscriberhealth.Mapping{Enabled: true, MaxConcurrency: 2}))
	got, err = b.mappings.Mapping(ctx, topology.CRM)
	require.NoError(t, err)
	require.Equal(t, subscriberhealth.Mapping{Enabled: true, MaxConcurrency: 2}, got)
	require.Eventually(t, func() bool { return b.count() == 12 }, 30*time.Second, 50*time.Millisecond)
	require.LessOrEqual(t, b.peak.Load(), int32(2), "at most the mapping's maximum concurrency")
}

// The local Lambda API answers as Lambda does: listing filters by function
// and queue, an unknown mapping is ResourceNotFoundException, a maximum
// concurrency outside 2..1000 is refused, and an empty ScalingConfig
// removes it.
func TestTheLocalMappingAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	all, err := b.client.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{})
	require.NoError(t, err)
	require.Len(t, all.EventSourceMappings, 2)
	mine, err := b.client.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{FunctionName: aws.String(awslocal.FunctionARN("consumer-crm"))})
	require.NoError(t, err)
	require.Len(t, mine.EventSourceMappings, 1)
	m := mine.EventSourceMappings[0]
	require.Equal(t, b.queue.ARN, aws.ToString(m.EventSourceArn))
	require.Equal(t, "Enabled", aws.ToString(m.State))
	require.Equal(t, int32(1), aws.ToInt32(m.BatchSize))
	require.Equal(t, lambdalocal.MappingARN(aws.ToString(m.UUID)), aws.ToString(m.EventSourceMappingArn))

	_, err = b.client.GetEventSourceMapping(ctx, &lambda.GetEventSourceMappingInput{UUID: aws.String("5a0c7a3e-0000-0000-0000-000000000000")})
	var nf *lambdatypes.ResourceNotFoundException
	require.ErrorAs(t, err, &nf)
	_, err = b.client.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{UUID: m.UUID, ScalingConfig: &lambdatypes.ScalingConfig{MaximumConcurrency: aws.Int32(1)}})
	var bad *lambdatypes.InvalidParameterValueException
	require.ErrorAs(t, err, &bad)
	up, err := b.client.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{UUID: m.UUID, ScalingConfig: &lambdatypes.ScalingConfig{MaximumConcurrency: aws.Int32(5)}})
	require.NoError(t, err)
	require.Equal(t, int32(5), aws.ToInt32(up.ScalingConfig.MaximumConcurrency))
	up, err = b.client.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{UUID: m.UUID, ScalingConfig: &lambdatypes.ScalingConfig{}})
	require.NoError(t, err)
	require.Nil(t, up.ScalingConfig)
	_, err = b.client.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{UUID: m.UUID, BatchSize: aws.Int32(3)})
	require.ErrorAs(t, err, &bad, "not emulated: refused rather than ignored")

	// A topic whose consumer has no mapping is an error, not a guess.
	none := &lambdaesm.Mappings{Client: b.client, Sources: map[string]lambdaesm.Source{topology.CRM: {Function: "consumer-crm", QueueARN: "arn:aws:sqs:us-east-1:000000000000:other"}}}
	_, err = none.Mapping(ctx, topology.CRM)
	require.ErrorContains(t, err, "0 event source mappings")
}
