package wire_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/deliver"
	"github.com/siteswarm/eventplatform/internal/dynamo"
	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/localaws/localawstest"
	"github.com/siteswarm/eventplatform/internal/logging"
	"github.com/siteswarm/eventplatform/internal/metric"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
)

var testSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("wire-test-signing-secret"))

func consumerEnv(topic string, mut func(m map[string]string)) *envconf.Reader {
	m := map[string]string{
		wire.EnvConsumerTopic:    topic,
		wire.EnvConsumerQueueURL: "https://sqs.example/q",
		wire.EnvConsumerDLQURL:   "https://sqs.example/dlq",
		wire.EnvEventsTable:      "events",
		wire.EnvIncidentsTable:   "incidents",
		wire.EnvBucket:           "bucket",
		wire.EnvSubscriberURL:    "https://hooks.example.com/platform",
		wire.EnvSubscriberSecret: testSecret,
	}
	if mut != nil {
		mut(m)
	}
	return envconf.FromMap(m)
}

func TestLoadHTTPConsumerConfig(t *testing.T) {
	t.Parallel()
	cfg, err := wire.LoadHTTPConsumerConfig(consumerEnv(topology.Billing, nil), topology.Default())
	require.NoError(t, err)
	require.Equal(t, 5*time.Second, cfg.BackoffBase)
	require.Equal(t, 15*time.Minute, cfg.BackoffCap)
	require.Equal(t, 10, cfg.Concurrency)
	require.Equal(t, 10*time.Second, cfg.RequestTimeout)
	require.Equal(t, 5*time.Minute, cfg.SecretRefresh)
	require.Equal(t, []string{testSecret}, cfg.Secrets)

	cases := map[string]struct {
		topic string
		mut   func(m map[string]string)
		want  string
	}{
		"no topic":            {"", nil, wire.EnvConsumerTopic},
		"unknown topic":       {"nope.events", nil, "not a topic"},
		"archive topic":       {topology.Audit, nil, `consumed by the "archive" consumer`},
		"purge topic":         {topology.CachePurge, nil, `"purge" consumer`},
		"no queue":            {topology.Billing, func(m map[string]string) { delete(m, wire.EnvConsumerQueueURL) }, wire.EnvConsumerQueueURL},
		"no dlq":              {topology.Billing, func(m map[string]string) { delete(m, wire.EnvConsumerDLQURL) }, wire.EnvConsumerDLQURL},
		"no incidents table":  {topology.Billing, func(m map[string]string) { delete(m, wire.EnvIncidentsTable) }, wire.EnvIncidentsTable},
		"no subscriber":       {topology.Billing, func(m map[string]string) { delete(m, wire.EnvSubscriberURL) }, wire.EnvSubscriberURL},
		"clear-text url":      {topology.Billing, func(m map[string]string) { m[wire.EnvSubscriberURL] = "http://hooks.example.com/x" }, "must be https"},
		"no secret":           {topology.Billing, func(m map[string]string) { delete(m, wire.EnvSubscriberSecret) }, wire.EnvSubscriberSecretARN},
		"both secrets":        {topology.Billing, func(m map[string]string) { m[wire.EnvSubscriberSecretARN] = "arn:aws:secretsmanager:x" }, "not both"},
		"malformed secret":    {topology.Billing, func(m map[string]string) { m[wire.EnvSubscriberSecret] = "whsec_***" }, "secret #1"},
		"timeout too long":    {topology.Billing, func(m map[string]string) { m[wire.EnvSubscriberTimeout] = "29s" }, "consumer timeout"},
		"sub-second backoff":  {topology.Billing, func(m map[string]string) { m[wire.EnvConsumerBackoffBase] = "100ms" }, wire.EnvConsumerBackoffBase},
		"cap below base":      {topology.Billing, func(m map[string]string) { m[wire.EnvConsumerBackoffCap] = "1s" }, wire.EnvConsumerBackoffCap},
		"no concurrency":      {topology.Billing, func(m map[string]string) { m[wire.EnvConsumerConcurrency] = "0" }, wire.EnvConsumerConcurrency},
		"bad duration":        {topology.Billing, func(m map[string]string) { m[wire.EnvSubscriberTimeout] = "soon" }, wire.EnvSubscriberTimeout},
		"short row retention": {topology.Billing, func(m map[string]string) { m[wire.EnvRetention] = "1h" }, wire.EnvRetention},
	}
	for name, tc := range cases {
		_, err := wire.LoadHTTPConsumerConfig(consumerEnv(tc.topic, tc.mut), topology.Default())
		require.ErrorContains(t, err, tc.want, name)
		require.NotContains(t, err.Error(), testSecret[6:], "%s: errors never quote a secret", name)
	}

	// Deployed stages name a Secrets Manager secret instead.
	cfg, err = wire.LoadHTTPConsumerConfig(consumerEnv(topology.CRM, func(m map[string]string) {
		delete(m, wire.EnvSubscriberSecret)
		m[wire.EnvSubscriberSecretARN] = "arn:aws:secretsmanager:us-east-1:123456789012:secret:evp-prod-crm"
	}), topology.Default())
	require.NoError(t, err)
	_, err = wire.NewHTTPConsumer(context.Background(), cfg, topology.Default(), wire.Clients{}, logging.Discard())
	require.ErrorContains(t, err, "Secrets Manager client")
}

func TestLoadArchiveConsumerConfig(t *testing.T) {
	t.Parallel()
	cfg, err := wire.LoadArchiveConsumerConfig(consumerEnv(topology.Audit, nil), topology.Default())
	require.NoError(t, err)
	require.Equal(t, "archive", cfg.Prefix)
	require.Equal(t, "bucket", cfg.Bucket)
	for name, tc := range map[string]struct {
		topic string
		mut   func(m map[string]string)
		want  string
	}{
		"http topic":    {topology.Billing, nil, `"http" consumer`},
		"no bucket":     {topology.Audit, func(m map[string]string) { delete(m, wire.EnvBucket) }, wire.EnvBucket},
		"slashy prefix": {topology.Audit, func(m map[string]string) { m[wire.EnvArchivePrefix] = "/archive/" }, wire.EnvArchivePrefix},
	} {
		_, err := wire.LoadArchiveConsumerConfig(consumerEnv(tc.topic, tc.mut), topology.Default())
		require.ErrorContains(t, err, tc.want, name)
	}
}

// The wired consumer-http graph against the emulators, with a local
// subscriber: Retry-After: 7 keeps the message off the queue for seven
// seconds (issue test 6, observed on the queue), then the retry is
// delivered with the same webhook-id and a valid signature.
func TestHTTPConsumerHonoursRetryAfterOnTheQueue(t *testing.T) {
	t.Parallel()
	tp := topology.Topic{Name: "orders.events", Consumer: topology.ConsumerHTTP, BatchSize: 10,
		ConsumerTimeout: 15 * time.Second, VisibilityTimeout: 60 * time.Second, MaxReceiveCount: 5, MaxOutboxAttempts: 5}
	top := topology.Topology{
		Topics:    []topology.Topic{tp},
		Producers: []topology.Producer{{Source: "shop", Types: []string{"order.*"}}},
		Routes:    []topology.Route{{Pattern: "order.*", Topics: []string{tp.Name}}},
	}
	env := localawstest.NewEnv(t, localawstest.WithTopology(top))
	ctx := context.Background()
	var (
		mu   sync.Mutex
		seen []http.Header
		body [][]byte
	)
	sub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		seen, body = append(seen, r.Header.Clone()), append(body, b)
		if len(seen) == 1 {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(sub.Close)

	clients := wire.Clients{DynamoDB: env.DynamoDB, SQS: env.SQS, S3: env.S3}
	q := env.Queue(tp.Name)
	urls, _ := json.Marshal(env.Resources.QueueURLs())
	icfg, err := wire.LoadIngestConfig(envconf.FromMap(map[string]string{
		wire.EnvEventsTable: env.Resources.EventsTable, wire.EnvBucket: env.Resources.Bucket, wire.EnvQueueURLs: string(urls),
	}), top)
	require.NoError(t, err)
	res, err := wire.NewIngest(icfg, top, clients, logging.Discard()).Publish(ctx, []byte(`{"id":"evt_ra","tenantId":"acme","type":"order.created","source":"shop","timestamp":"2026-12-02T11:59:00Z","payload":{"order":1}}`))
	require.NoError(t, err)
	require.Equal(t, envelope.StatusEnqueued, res.Status)

	cfg, err := wire.LoadHTTPConsumerConfig(envconf.FromMap(map[string]string{
		wire.EnvConsumerTopic: tp.Name, wire.EnvConsumerQueueURL: q.URL, wire.EnvConsumerDLQURL: q.DLQURL,
		wire.EnvEventsTable: env.Resources.EventsTable, wire.EnvIncidentsTable: env.Resources.IncidentsTable,
		wire.EnvSubscriberURL: sub.URL + "/hook", wire.EnvSubscriberSecret: testSecret, wire.EnvSubscriberTimeout: "2s",
	}), top)
	require.NoError(t, err)
	c, err := wire.NewHTTPConsumer(context.Background(), cfg, top, clients, logging.Discard())
	require.NoError(t, err)
	c.Metrics = metric.Discard()

	handle := func() events.SQSEventResponse {
		msgs := env.ReceiveAll(ctx, q.URL, 1, 15*time.Second)
		require.Len(t, msgs, 1)
		ev := events.SQSEvent{}
		for _, m := range msgs {
			rec := events.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body), Attributes: m.Attributes, MessageAttributes: map[string]events.SQSMessageAttribute{}}
			for k, v := range m.MessageAttributes {
				rec.MessageAttributes[k] = events.SQSMessageAttribute{DataType: aws.ToString(v.DataType), StringValue: v.StringValue}
			}
			ev.Records = append(ev.Records, rec)
		}
		lctx, cancel := context.WithTimeout(ctx, tp.ConsumerTimeout)
		defer cancel()
		resp, err := c.Handle(lctx, ev)
		require.NoError(t, err)
		return resp
	}
	start := time.Now()
	require.Len(t, handle().BatchItemFailures, 1, "503 is retried")
	resp := handle() // blocks until the message is visible again
	back := time.Since(start)
	require.GreaterOrEqual(t, back, 7*time.Second-20*time.Millisecond, "the message came back after %s, before the subscriber's Retry-After", back)
	require.Less(t, back, 15*time.Second, "the queue's own 60 s visibility timeout did not decide it")
	require.Empty(t, resp.BatchItemFailures)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, 2)
	require.Equal(t, seen[0].Get("webhook-id"), seen[1].Get("webhook-id"))
	require.NoError(t, deliver.Verify(testSecret, seen[1], body[1], deliver.DefaultTolerance, time.Now()))
	_, rows, err := (&dynamo.Events{Client: env.DynamoDB, Table: env.Resources.EventsTable}).Load(ctx, "acme/evt_ra")
	require.NoError(t, err)
	require.Equal(t, outbox.StatusCompleted, rows[0].Status)
	require.Contains(t, rows[0].LastError, "subscriber answered 503")
}
