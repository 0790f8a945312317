package cachepurge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/cachepurge"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
	"github.com/siteswarm/eventplatform/internal/thirdparty/cfpurge/cfpurgetest"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire/purgeconsumerfn"
	"github.com/siteswarm/eventplatform/internal/wire/wiretest"
)

const (
	token = "cf-test-token-0123456789"
	topic = topology.CachePurge
)

// Zones of the test tenants at the stand-in Cloudflare.
var zones = map[string]string{"acme": "zone-acme", "globex": "zone-globex", "initech": "zone-initech"}

// bundle is the cache purge service on the emulators: ingress publishing
// through the real ingest, the cache.purge queue, consumer-purge as its
// Lambda builds it, calling a local stand-in of Cloudflare that checks the
// token, the zone and the bodies.
type bundle struct {
	env      *awslocaltest.Env
	cdn      *cfpurgetest.Server
	store    *dynamo.Purge
	ingress  *cachepurge.Ingress
	ingest   *ingest.Service
	consumer *consume.Consumer
	clock    *testkit.Clock
	metrics  *testkit.Buffer
}

type option func(settings map[string]string)

func setting(k, v string) option { return func(m map[string]string) { m[k] = v } }

func setup(t *testing.T, opts ...option) *bundle {
	t.Helper()
	env := awslocaltest.NewEnv(t)
	cdn := cfpurgetest.New(t, token, "zone-acme", "zone-globex", "zone-initech")
	b := &bundle{env: env, cdn: cdn, clock: testkit.NewClock(time.Now().UTC()), metrics: &testkit.Buffer{}}
	b.store = &dynamo.Purge{Client: env.DynamoDB, Table: env.Resources.PurgeTable, Now: b.clock.Now}
	b.ingest = wiretest.Ingest(t, env, wiretest.Opts{})
	var err error
	b.ingress, err = cachepurge.NewIngress(cachepurge.IngressConfig{}, cachepurge.IngressDeps{Jobs: b.store, Publisher: b.ingest, Now: b.clock.Now})
	require.NoError(t, err)
	settings := map[string]string{
		purgeconsumerfn.EnvAPIBaseURL: cdn.BaseURL(),
		purgeconsumerfn.EnvToken:      token,
		purgeconsumerfn.EnvZones:      testkit.MustJSON(map[string]any{"zones": zones}),
		purgeconsumerfn.EnvRate:       "100",
	}
	for _, o := range opts {
		o(settings)
	}
	b.consumer = wiretest.PurgeConsumer(t, env, topic, wiretest.Opts{Settings: settings, Metrics: &metric.Emitter{W: b.metrics}})
	return b
}

// purgeTags asks ingress for a purge and requires it queued.
func (b *bundle) purgeTags(t *testing.T, tenant string, tags ...string) cachepurge.Result {
	t.Helper()
	res := b.ingress.PurgeTags(context.Background(), tenant, tags)
	require.True(t, res.OK, "%+v", res.Error)
	return res
}

// receive takes n messages off the cache.purge queue (they stay in flight).
func (b *bundle) receive(t *testing.T, n int) []sqstypes.Message {
	t.Helper()
	msgs := b.env.ReceiveAll(context.Background(), b.env.Queue(topic).URL, n, 10*time.Second)
	require.Len(t, msgs, n)
	return msgs
}

// handle runs consumer-purge on messages as the SQS event source would,
// each delivered for the attempt-th time.
func (b *bundle) handle(t *testing.T, attempt int, msgs []sqstypes.Message) events.SQSEventResponse {
	t.Helper()
	ev := lambdalocal.SQSEvent(b.env.Queue(topic).ARN, msgs)
	for i := range ev.Records {
		ev.Records[i].Attributes["ApproximateReceiveCount"] = fmt.Sprint(attempt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	resp, err := b.consumer.Handle(ctx, ev)
	require.NoError(t, err)
	return resp
}

func (b *bundle) job(t *testing.T, id string) cachepurge.Job {
	t.Helper()
	j, ok, err := b.store.Job(context.Background(), id)
	require.NoError(t, err)
	require.True(t, ok, "job %s", id)
	return j
}

// items counts the purge table's items (nothing written by a refusal).
func (b *bundle) items(t *testing.T) int {
	t.Helper()
	out, err := b.env.DynamoDB.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(b.env.Resources.PurgeTable), Select: "COUNT"})
	require.NoError(t, err)
	return int(out.Count)
}

// dlqMessages drains the topic's DLQ.
func (b *bundle) dlqMessages(t *testing.T) []sqstypes.Message {
	t.Helper()
	return b.env.ReceiveAll(context.Background(), b.env.Queue(topic).DLQURL, 0, 0)
}

// visibilities records every visibility change the consumer asks for.
func (b *bundle) visibilities(t *testing.T) func() []int32 {
	t.Helper()
	var mu sync.Mutex
	var got []int32
	b.env.Faults.Add(awslocal.Fault{Service: "SQS", Match: func(in any) bool {
		mu.Lock()
		defer mu.Unlock()
		switch v := in.(type) {
		case *sqs.ChangeMessageVisibilityInput:
			got = append(got, v.VisibilityTimeout)
		case *sqs.ChangeMessageVisibilityBatchInput:
			for _, e := range v.Entries {
				got = append(got, e.VisibilityTimeout)
			}
		}
		return false // an observer: never fails the call
	}})
	return func() []int32 {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// tagsOf returns n distinct tags of tenant.
func tagsOf(tenant string, n int, prefix string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("tenant:%s:page:/%s%03d", tenant, prefix, i)
	}
	return out
}

func decode[T any](t *testing.T, raw []byte) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(raw, &v))
	return v
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
