package httpconsumerfn_test

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/handlers/deliver"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/secret"
	"github.com/siteswarm/eventplatform/internal/subscriberhealth"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/consumerfn"
	"github.com/siteswarm/eventplatform/internal/wire/httpconsumerfn"
	"github.com/siteswarm/eventplatform/internal/wire/wiretest"
)

var testSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("wire-test-signing-secret"))

func env(topic string, mut func(m map[string]string)) *envconf.Reader {
	m := map[string]string{
		consumerfn.EnvTopic:             topic,
		consumerfn.EnvQueueURL:          "https://sqs.example/q",
		consumerfn.EnvDLQURL:            "https://sqs.example/dlq",
		wire.EnvEventsTable:             "events",
		wire.EnvIncidentsTable:          "incidents",
		wire.EnvBucket:                  "bucket",
		httpconsumerfn.EnvSubscriberURL: "https://hooks.example.com/platform",
		httpconsumerfn.EnvSecret:        testSecret,
	}
	if mut != nil {
		mut(m)
	}
	return envconf.FromMap(m)
}

func TestLoad(t *testing.T) {
	t.Parallel()
	cfg, err := httpconsumerfn.Load(env(topology.Billing, nil), topology.Default())
	require.NoError(t, err)
	require.Equal(t, 5*time.Second, cfg.Consume.Backoff.Base)
	require.Equal(t, 15*time.Minute, cfg.Consume.Backoff.Cap)
	require.Equal(t, 10, cfg.Consume.Concurrency)
	require.Equal(t, 10*time.Second, cfg.RequestTimeout)
	require.Equal(t, secret.DefaultRefresh, cfg.Secrets.Keyring.Refresh)
	require.Equal(t, []string{testSecret}, cfg.Secrets.List)

	for name, tc := range map[string]struct {
		topic string
		mut   func(m map[string]string)
		want  string
	}{
		"no topic":           {"", nil, consumerfn.EnvTopic},
		"unknown topic":      {"nope.events", nil, "not a topic"},
		"archive topic":      {topology.Audit, nil, `consumed by the "archive" consumer`},
		"purge topic":        {topology.CachePurge, nil, `"purge" consumer`},
		"no queue":           {topology.Billing, func(m map[string]string) { delete(m, consumerfn.EnvQueueURL) }, consumerfn.EnvQueueURL},
		"no dlq":             {topology.Billing, func(m map[string]string) { delete(m, consumerfn.EnvDLQURL) }, consumerfn.EnvDLQURL},
		"no incidents table": {topology.Billing, func(m map[string]string) { delete(m, wire.EnvIncidentsTable) }, wire.EnvIncidentsTable},
		"no subscriber":      {topology.Billing, func(m map[string]string) { delete(m, httpconsumerfn.EnvSubscriberURL) }, httpconsumerfn.EnvSubscriberURL},
		"clear-text url":     {topology.Billing, func(m map[string]string) { m[httpconsumerfn.EnvSubscriberURL] = "http://hooks.example.com/x" }, "must be https"},
		"no secret":          {topology.Billing, func(m map[string]string) { delete(m, httpconsumerfn.EnvSecret) }, httpconsumerfn.EnvSecretARN},
		"both secrets":       {topology.Billing, func(m map[string]string) { m[httpconsumerfn.EnvSecretARN] = "arn:aws:secretsmanager:x" }, "not both"},
		"malformed secret":   {topology.Billing, func(m map[string]string) { m[httpconsumerfn.EnvSecret] = "whsec_***" }, "secret #1"},
		"timeout too long":   {topology.Billing, func(m map[string]string) { m[httpconsumerfn.EnvTimeout] = "29s" }, "consumer timeout"},
		"sub-second backoff": {topology.Billing, func(m map[string]string) { m[consumerfn.EnvBackoffBase] = "100ms" }, "backoff base 100ms must be 1s..1h"},
		"cap below base":     {topology.Billing, func(m map[string]string) { m[consumerfn.EnvBackoffCap] = "1s" }, "backoff cap 1s"},
		"zero concurrency":   {topology.Billing, func(m map[string]string) { m[consumerfn.EnvConcurrency] = "-1" }, "concurrency -1 must be 1..100"},
		"bad duration":       {topology.Billing, func(m map[string]string) { m[httpconsumerfn.EnvTimeout] = "soon" }, httpconsumerfn.EnvTimeout},
		"refresh too fast":   {topology.Billing, func(m map[string]string) { m[httpconsumerfn.EnvSecretRefresh] = "1s" }, httpconsumerfn.EnvSecretRefresh},
	} {
		_, err := httpconsumerfn.Load(env(tc.topic, tc.mut), topology.Default())
		require.ErrorContains(t, err, tc.want, name)
		require.NotContains(t, err.Error(), testSecret[6:], "%s: errors never quote a secret", name)
	}

	// Deployed stages name a Secrets Manager secret instead.
	cfg, err = httpconsumerfn.Load(env(topology.CRM, func(m map[string]string) {
		delete(m, httpconsumerfn.EnvSecret)
		m[httpconsumerfn.EnvSecretARN] = "arn:aws:secretsmanager:us-east-1:123456789012:secret:evp-prod-crm"
	}), topology.Default())
	require.NoError(t, err)
	_, err = httpconsumerfn.New(context.Background(), cfg, httpconsumerfn.Clients{}, wire.Runtime{})
	require.ErrorContains(t, err, "no Secrets Manager client")
}

// The wired consumer-http graph against the emulators, with a local
// subscriber: Retry-After: 7 keeps the message off the queue for seven
// seconds (observed on the queue), then the retry is delivered with the
// same webhook-id and a valid signature.
func TestHonoursRetryAfterOnTheQueue(t *testing.T) {
	t.Parallel()
	tp := topology.Topic{Name: "orders.events", Consumer: topology.ConsumerHTTP, BatchSize: 10,
		ConsumerTimeout: 15 * time.Second, VisibilityTimeout: 60 * time.Second, MaxReceiveCount: 5, MaxOutboxAttempts: 5}
	top := topology.Topology{
		Topics:    []topology.Topic{tp},
		Producers: []topology.Producer{{Source: "shop", Types: []string{"order.*"}}},
		Routes:    []topology.Route{{Pattern: "order.*", Topics: []string{tp.Name}}},
	}
	e := awslocaltest.NewEnv(t, awslocaltest.WithTopology(top))
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

	res, err := wiretest.Ingest(t, e, wiretest.Opts{}).Publish(ctx, []byte(`{"id":"evt_ra","tenantId":"acme","type":"order.created","source":"shop","timestamp":"2026-12-02T11:59:00Z","payload":{"order":1}}`))
	require.NoError(t, err)
	require.Equal(t, envelope.StatusEnqueued, res.Status)
	c := wiretest.HTTPConsumer(t, e, tp.Name, wiretest.Opts{Settings: map[string]string{
		httpconsumerfn.EnvSubscriberURL: sub.URL + "/hook", httpconsumerfn.EnvSecret: testSecret, httpconsumerfn.EnvTimeout: "2s",
	}})

	q := e.Queue(tp.Name)
	handle := func() events.SQSEventResponse {
		msgs := e.ReceiveAll(ctx, q.URL, 1, 15*time.Second)
		require.Len(t, msgs, 1)
		lctx, cancel := context.WithTimeout(ctx, tp.ConsumerTimeout)
		defer cancel()
		resp, err := c.Handle(lctx, lambdalocal.SQSEvent(q.ARN, msgs))
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
	_, rows, err := (e.Events()).Load(ctx, "acme/evt_ra")
	require.NoError(t, err)
	require.Equal(t, outbox.StatusCompleted, rows[0].Status)
	require.Contains(t, rows[0].LastError, "subscriber answered 503")
}

// The wired consumer-http has the topic's breaker: a subscriber that
// answers 503 to everything trips it (its record in the events table goes
// open), the consumer tells the subscriber-health function named by
// HEALTH_FUNCTION through the Lambda API, and no message reaches the DLQ:
// the last attempt of each is held instead of dead-lettered.
func TestTheWiredConsumerTripsTheTopicsBreaker(t *testing.T) {
	t.Parallel()
	tp := topology.Topic{Name: "orders.events", Consumer: topology.ConsumerHTTP, BatchSize: 10,
		ConsumerTimeout: 15 * time.Second, VisibilityTimeout: 60 * time.Second, MaxReceiveCount: 2, MaxOutboxAttempts: 5,
		Breaker: topology.Breaker{TripAfter: 3, ProbeAfter: time.Minute}}
	top := topology.Topology{
		Topics:    []topology.Topic{tp},
		Producers: []topology.Producer{{Source: "shop", Types: []string{"order.*"}}},
		Routes:    []topology.Route{{Pattern: "order.*", Topics: []string{tp.Name}}},
	}
	e := awslocaltest.NewEnv(t, awslocaltest.WithTopology(top))
	ctx := context.Background()
	sub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	t.Cleanup(sub.Close)
	var (
		mu      sync.Mutex
		notices []subscriberhealth.Notice
	)
	fns := lambdalocal.NewFunctions()
	fns.Register("subscriber-health", func(_ context.Context, n subscriberhealth.Notice) error {
		mu.Lock()
		defer mu.Unlock()
		notices = append(notices, n)
		return nil
	})
	e.ServeFunctions(fns)

	in := wiretest.Ingest(t, e, wiretest.Opts{})
	for i := range 4 {
		res, err := in.Publish(ctx, []byte(`{"id":"evt_trip_`+strconv.Itoa(i)+`","tenantId":"acme","type":"order.created","source":"shop","timestamp":"2026-12-02T11:59:00Z","payload":{"order":1}}`))
		require.NoError(t, err)
		require.Equal(t, envelope.StatusEnqueued, res.Status)
	}
	c := wiretest.HTTPConsumer(t, e, tp.Name, wiretest.Opts{Settings: map[string]string{
		httpconsumerfn.EnvSubscriberURL: sub.URL + "/hook", httpconsumerfn.EnvSecret: testSecret, httpconsumerfn.EnvTimeout: "2s",
		consumerfn.EnvBackoffBase: "1s", consumerfn.EnvHealthFunction: "subscriber-health",
	}})
	store := &dynamo.Breakers{Client: e.DynamoDB, Table: e.Resources.EventsTable}
	q := e.Queue(tp.Name)
	deadline := time.Now().Add(45 * time.Second)
	for {
		h, err := store.Get(ctx, tp.Name)
		require.NoError(t, err)
		if h.State == subscriberhealth.Open {
			require.Contains(t, h.LastError, "503")
			break
		}
		require.True(t, time.Now().Before(deadline), "the breaker did not open: %+v", h)
		msgs := e.ReceiveAll(ctx, q.URL, 4, 3*time.Second)
		if len(msgs) == 0 {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, tp.ConsumerTimeout)
		resp, err := c.Handle(lctx, lambdalocal.SQSEvent(q.ARN, msgs))
		cancel()
		require.NoError(t, err)
		failed, err := lambdalocal.FailedItems(msgs, resp)
		require.NoError(t, err)
		for _, m := range msgs {
			if !failed[aws.ToString(m.MessageId)] {
				_, err := e.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: m.ReceiptHandle})
				require.NoError(t, err)
			}
		}
	}
	// The notice is an asynchronous invoke: wait for it.
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(notices) > 0
	}, 10*time.Second, 50*time.Millisecond)
	mu.Lock()
	require.Equal(t, subscriberhealth.Notice{Topic: tp.Name}, notices[0])
	mu.Unlock()
	visible, inflight := e.QueueDepth(ctx, q.DLQURL)
	require.Zero(t, visible+inflight, "nothing dead-lettered")
}

// Two tenants publish the same internal id: two events, and a subscriber
// following docs/consumers.md — verify the signature (the Standard
// Webhooks reference library), deduplicate on webhook-id — processes both
// (with the event id as webhook-id it dropped the second tenant's as a
// duplicate).
func TestASubscriberDeduplicatingOnWebhookIDKeepsTwoTenantsEvents(t *testing.T) {
	t.Parallel()
	tp := topology.Topic{Name: "orders.events", Consumer: topology.ConsumerHTTP, BatchSize: 10,
		ConsumerTimeout: 15 * time.Second, VisibilityTimeout: 60 * time.Second, MaxReceiveCount: 5, MaxOutboxAttempts: 5}
	top := topology.Topology{
		Topics:    []topology.Topic{tp},
		Producers: []topology.Producer{{Source: "shop", Types: []string{"order.*"}}},
		Routes:    []topology.Route{{Pattern: "order.*", Topics: []string{tp.Name}}},
	}
	e := awslocaltest.NewEnv(t, awslocaltest.WithTopology(top))
	ctx := context.Background()
	wh, err := standardwebhooks.NewWebhook(testSecret)
	require.NoError(t, err)
	var (
		mu        sync.Mutex
		seen      = map[string]bool{}
		processed []string // tenants whose event the subscriber acted on
		dropped   int
	)
	sub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := wh.Verify(body, r.Header); err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if id := r.Header.Get("webhook-id"); seen[id] {
			dropped++ // already processed: acknowledge, do nothing
		} else {
			seen[id] = true
			ev, rerr := envelope.ParseMessage(body)
			if rerr == nil {
				processed = append(processed, ev.TenantID)
			}
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(sub.Close)

	svc := wiretest.Ingest(t, e, wiretest.Opts{})
	for _, tenant := range []string{"acme", "globex"} {
		res, err := svc.Publish(ctx, []byte(`{"id":"ord-1","tenantId":"`+tenant+`","type":"order.created","source":"shop","timestamp":"2026-12-02T11:59:00Z","payload":{"order":1}}`))
		require.NoError(t, err)
		require.Equal(t, envelope.StatusEnqueued, res.Status, tenant)
	}
	c := wiretest.HTTPConsumer(t, e, tp.Name, wiretest.Opts{Settings: map[string]string{
		httpconsumerfn.EnvSubscriberURL: sub.URL + "/hook", httpconsumerfn.EnvSecret: testSecret, httpconsumerfn.EnvTimeout: "2s",
	}})
	q := e.Queue(tp.Name)
	msgs := e.ReceiveAll(ctx, q.URL, 2, 15*time.Second)
	require.Len(t, msgs, 2)
	resp, err := c.Handle(ctx, lambdalocal.SQSEvent(q.ARN, msgs))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)

	mu.Lock()
	require.ElementsMatch(t, []string{"acme", "globex"}, processed, "each tenant's event processed once")
	require.Zero(t, dropped)
	require.True(t, seen["acme/ord-1"] && seen["globex/ord-1"], "webhook-id is the storage key: %v", seen)
	mu.Unlock()
}
