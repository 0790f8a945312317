package devstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/handlers/deliver"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire/consumerfn"
)

// The local stack runs one consumer per HTTP and archive topic behind an
// SQS event source: an inquiry is delivered, signed, to the sink
// (notifications.events) and to an overridden subscriber (crm.sync); an
// audit event is archived to S3.
func TestConsumersDeliverAndArchiveThroughTheLocalStack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var (
		mu  sync.Mutex
		crm []*http.Request
		raw [][]byte
	)
	sub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		crm, raw = append(crm, r), append(raw, body)
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(sub.Close)

	top := topology.Default().Clone()
	for i := range top.Topics {
		if top.Topics[i].Name == topology.Audit {
			top.Topics[i].BatchWindow = time.Second // not 30 s in a test
		}
	}
	st, err := devstack.Start(ctx, devstack.Options{
		Addr: "127.0.0.1:0", Prefix: awslocal.NewPrefix(), Log: logging.Discard(), Topology: top,
		Env: envconf.FromMap(map[string]string{"SUBSCRIBER_URL_CRM_SYNC": sub.URL + "/crm"}),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	require.Equal(t, sub.URL+"/crm", st.SubscriberURL(topology.CRM))
	require.Equal(t, st.URL()+"/__deliveries/notifications.events", st.SubscriberURL(topology.Notifications))

	client := awslocal.NewLambdaClient(awslocal.NewConfig(), st.URL())
	for _, f := range []string{"storefront-inquiry-created.json", "platform-audit-login.json"} {
		payload, err := os.ReadFile("../../../events/ingest/valid/" + f)
		require.NoError(t, err)
		out, err := client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("ingest"), Payload: payload})
		require.NoError(t, err)
		require.Nil(t, out.FunctionError, "%s", out.Payload)
	}

	require.Eventually(t, func() bool { return len(st.Sink.Deliveries(topology.Notifications)) == 1 }, 20*time.Second, 50*time.Millisecond)
	d := st.Sink.Deliveries(topology.Notifications)[0]
	h := http.Header{}
	for k, v := range d.Headers {
		h.Set(k, v)
	}
	require.NoError(t, deliver.Verify(devstack.DefaultSubscriberSecret, h, d.Body, deliver.DefaultTolerance, time.Now()),
		"signed with the local default secret")
	require.Equal(t, devstack.SignatureVerified, d.Signature, "the sink checked it too")
	require.Equal(t, "green-leaf-bakery/"+d.EventID, h.Get("webhook-id"), "webhook-id is the event's storage key: unique across tenants")

	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(crm) == 1 }, 20*time.Second, 50*time.Millisecond)
	mu.Lock()
	require.Equal(t, "/crm", crm[0].URL.Path)
	require.NoError(t, deliver.Verify(devstack.DefaultSubscriberSecret, crm[0].Header, raw[0], deliver.DefaultTolerance, time.Now()))
	mu.Unlock()

	var keys []string
	require.Eventually(t, func() bool {
		out, err := st.Clients.S3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(st.Resources.Bucket), Prefix: aws.String("archive/audit.events/2026/11/30/t_001/")})
		if err != nil || len(out.Contents) == 0 {
			return false
		}
		keys = []string{aws.ToString(out.Contents[0].Key)}
		return true
	}, 20*time.Second, 100*time.Millisecond, "the audit event is archived")
	obj, err := st.Clients.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(st.Resources.Bucket), Key: aws.String(keys[0])})
	require.NoError(t, err)
	body, _ := io.ReadAll(obj.Body)
	obj.Body.Close()
	require.True(t, bytes.Contains(body, []byte(`"id":"audit.2026-11-30.000042"`)), "%s", body)
	require.True(t, strings.HasSuffix(string(body), "\n"))

	// One consumer per topic, named after it (purge topics' from the cache
	// purge service).
	for _, tp := range top.Topics {
		out, err := client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(consumerfn.FunctionName(tp)), Payload: []byte(`{"Records":[]}`)})
		require.NoError(t, err, tp.Name)
		require.Nil(t, out.FunctionError, "%s: %s", tp.Name, out.Payload)
		require.JSONEq(t, `{"batchItemFailures":[]}`, string(out.Payload))
	}
	require.Equal(t, "consumer-http-billing-events", consumerfn.FunctionName(topology.Topic{Name: "billing.events", Consumer: topology.ConsumerHTTP}))
}

func TestBadSubscriberSettingFailsTheStart(t *testing.T) {
	t.Parallel()
	_, err := devstack.Start(context.Background(), devstack.Options{
		Addr: "127.0.0.1:0", Prefix: awslocal.NewPrefix(), Log: logging.Discard(),
		Env: envconf.FromMap(map[string]string{"SUBSCRIBER_URL_BILLING_EVENTS": "http://hooks.example.com/x"}),
	})
	require.ErrorContains(t, err, "consumer-http-billing-events")
	require.ErrorContains(t, err, "must be https")
}

// A delivery recorded by the sink verifies with the Standard Webhooks
// reference library over the body GET /__deliveries lists: the listing
// keeps the body's bytes as sent (the payload's own spacing included), so
// a subscriber can check its verification code against what the local
// stack delivered.
func TestARecordedDeliveryVerifiesWithTheStandardWebhooksLibrary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := startStack(t)
	payload, err := os.ReadFile("../../../events/ingest/valid/storefront-inquiry-created.json")
	require.NoError(t, err)
	payload = bytes.Replace(payload, []byte(`"Do you cater weddings?"`), []byte(`"Cakes <b>&</b> pies?  Yes"`), 1)
	client := awslocal.NewLambdaClient(awslocal.NewConfig(), st.URL())
	out, err := client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("ingest"), Payload: payload})
	require.NoError(t, err)
	require.Nil(t, out.FunctionError, "%s", out.Payload)
	require.Eventually(t, func() bool { return len(st.Sink.Deliveries(topology.Notifications)) == 1 }, 20*time.Second, 50*time.Millisecond)

	resp, err := http.Get(st.URL() + devstack.SinkPath + "?topic=" + topology.Notifications)
	require.NoError(t, err)
	listed, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	var got struct {
		Deliveries []struct {
			Headers map[string]string `json:"headers"`
			Body    json.RawMessage   `json:"body"`
		} `json:"deliveries"`
	}
	require.NoError(t, json.Unmarshal(listed, &got))
	require.Len(t, got.Deliveries, 1)
	d := got.Deliveries[0]
	require.Contains(t, string(d.Body), `"payload":{"inquiryId": "inq_01JDX8W4ZQ3V6", "name": "Ada"`, "the payload's bytes as the producer sent them")
	require.Contains(t, string(d.Body), `<b>&</b>`, "not HTML-escaped")
	h := http.Header{}
	for k, v := range d.Headers {
		h.Set(k, v)
	}
	wh, err := standardwebhooks.NewWebhook(devstack.DefaultSubscriberSecret)
	require.NoError(t, err)
	require.NoError(t, wh.Verify(d.Body, h), "the listed body verifies with the reference library")
}
