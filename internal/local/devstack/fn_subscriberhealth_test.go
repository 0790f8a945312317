package devstack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/subscriberhealth"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire/consumerfn"
)

// fastBreaker is the default topology with crm.sync's breaker on a
// test's clock: trips after 3 failures, probes after 1 s (at most 2 s
// apart), a 1 s probe window and ramp step, 2 s quiet.
func fastBreaker() topology.Topology {
	top := topology.Default().Clone()
	for i := range top.Topics {
		if top.Topics[i].Name == topology.CRM {
			top.Topics[i].Breaker = topology.Breaker{TripAfter: 3, ProbeAfter: time.Second, ProbeMax: 2 * time.Second,
				ProbeWindow: time.Second, RampEvery: time.Second, Quiet: 2 * time.Second}
		}
	}
	return top
}

func publishInquiries(t *testing.T, client *lambda.Client, prefix string, n int) {
	t.Helper()
	for i := range n {
		payload := fmt.Sprintf(`{"id":"%s_%d","tenantId":"acme","type":"inquiry.created","source":"storefront","timestamp":"2026-11-29T18:42:10Z","payload":{"inquiryId":"%s_%d"}}`, prefix, i, prefix, i)
		out, err := client.Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String("ingest"), Payload: []byte(payload)})
		require.NoError(t, err)
		require.Nil(t, out.FunctionError, "%s", out.Payload)
	}
}

// mappingState is the crm.sync consumer's event source mapping as the
// Lambda API reports it.
func mappingState(t *testing.T, client *lambda.Client, st *devstack.Stack) (string, int32) {
	t.Helper()
	out, err := client.ListEventSourceMappings(context.Background(), &lambda.ListEventSourceMappingsInput{
		FunctionName: aws.String(consumerfn.FunctionName(topology.Topic{Name: topology.CRM, Consumer: topology.ConsumerHTTP})),
	})
	require.NoError(t, err)
	require.Len(t, out.EventSourceMappings, 1)
	m := out.EventSourceMappings[0]
	require.Equal(t, st.Resources.Queues[topology.CRM].ARN, aws.ToString(m.EventSourceArn))
	var c int32
	if m.ScalingConfig != nil {
		c = aws.ToInt32(m.ScalingConfig.MaximumConcurrency)
	}
	return aws.ToString(m.State), c
}

// A subscriber that goes down trips its topic's breaker: the
// subscriber-health function disables the topic's event source mapping
// through the Lambda API (the queue holds the events, nothing is
// dead-lettered), says so once at /__alerts, probes on its backoff, and
// when the subscriber is back closes the breaker, drains the backlog at a
// ramped concurrency and announces the recovery once. The other topic of
// the same events is delivered throughout.
func TestTheBreakerHoldsADeadSubscribersEventsAndDrainsThem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := devstack.Start(ctx, devstack.Options{
		Addr: "127.0.0.1:0", Prefix: awslocal.NewPrefix(), Log: logging.Discard(), Topology: fastBreaker(),
		Env: envconf.FromMap(map[string]string{"HEALTH_PERIOD": "1s", "CONSUMER_BACKOFF_BASE": "1s", "CONSUMER_BACKOFF_CAP": "2s"}),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	client := awslocal.NewLambdaClient(awslocal.NewConfig(), st.URL())
	store := &dynamo.Breakers{Client: st.Clients.DynamoDB, Table: st.Resources.EventsTable}
	state, _ := mappingState(t, client, st)
	require.Equal(t, "Enabled", state)

	st.Sink.Fail(topology.CRM, http.StatusServiceUnavailable, 0)
	publishInquiries(t, client, "inq_brk", 12)
	require.Eventually(t, func() bool {
		h, err := store.Get(ctx, topology.CRM)
		require.NoError(t, err)
		s, _ := mappingState(t, client, st)
		return h.State != subscriberhealth.Closed && s == "Disabled"
	}, 60*time.Second, 100*time.Millisecond, "the breaker opens and the mapping is disabled")
	require.Eventually(t, func() bool { return len(st.Sink.Deliveries(topology.Notifications)) >= 12 }, 30*time.Second, 100*time.Millisecond,
		"the other topic is delivered meanwhile")
	// Probes fail while it is down: the breaker keeps holding.
	time.Sleep(4 * time.Second)

	st.Sink.Recover(topology.CRM)
	require.Eventually(t, func() bool {
		ok := 0
		for _, d := range st.Sink.Deliveries(topology.CRM) {
			if d.Delivered() {
				ok++
			}
		}
		return ok == 12
	}, 60*time.Second, 100*time.Millisecond, "every held event is delivered once the subscriber is back")
	require.Eventually(t, func() bool {
		h, err := store.Get(ctx, topology.CRM)
		require.NoError(t, err)
		s, c := mappingState(t, client, st)
		return h.State == subscriberhealth.Closed && h.OutageSince.IsZero() && h.Concurrency == 0 && s == "Enabled" && c != 2
	}, 30*time.Second, 100*time.Millisecond, "the outage ends: closed, enabled")
	visible, inflight := dlqDepth(t, st, st.Resources.Queues[topology.CRM].DLQURL)
	require.Zero(t, visible+inflight, "nothing was dead-lettered")

	var alerts struct {
		Alerts []devstack.Alert `json:"alerts"`
	}
	require.Eventually(t, func() bool {
		resp, err := http.Get(st.URL() + devstack.AlertsPath)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&alerts))
		return len(alerts.Alerts) >= 2
	}, 20*time.Second, 100*time.Millisecond)
	time.Sleep(time.Second)
	kinds := map[string]int{}
	for _, a := range st.Alerts.List() {
		require.Equal(t, topology.CRM, a.Topic)
		kinds[a.Kind]++
	}
	require.Equal(t, map[string]int{subscriberhealth.KindUnhealthy: 1, subscriberhealth.KindRecovered: 1}, kinds, "one alert per transition")
	var rec subscriberhealth.Alert
	for _, a := range st.Alerts.List() {
		if a.Kind == subscriberhealth.KindRecovered {
			require.NoError(t, json.Unmarshal([]byte(a.Message), &rec))
		}
	}
	require.NotEmpty(t, rec.Outage)
	require.Positive(t, rec.Backlog, "the backlog it drained")

	req, _ := http.NewRequest(http.MethodDelete, st.URL()+devstack.AlertsPath, nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Empty(t, st.Alerts.List())
}
