package consume_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/s3blob"
	"github.com/siteswarm/eventplatform/internal/aws/sqsqueue"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/ingestfn"
	"github.com/siteswarm/eventplatform/internal/wire/wiretest"
)

// topicName is the test topology's one topic: orders from the "shop"
// producer.
const topicName = "orders.events"

// testTopic is tuned for tests: a one-second backoff base comes with it
// (see setup), a short consumer timeout, a visibility timeout long enough
// that only the runtime's own visibility changes bring a message back.
func testTopic() topology.Topic {
	return topology.Topic{
		Name: topicName, Consumer: topology.ConsumerHTTP,
		BatchSize: 10, MaxConcurrency: 2,
		ConsumerTimeout: 10 * time.Second, VisibilityTimeout: 30 * time.Second,
		MaxReceiveCount: 5, MaxOutboxAttempts: 5,
	}
}

type bundle struct {
	env      *awslocaltest.Env
	topic    topology.Topic
	q        awslocal.Queue
	events   *dynamo.Events
	ingest   *ingest.Service
	consumer *consume.Consumer
	handler  *recorder
	metrics  *testkit.Buffer
	cfg      consume.Config
	deps     consume.Deps
}

type option func(*topology.Topic)

func setup(t testing.TB, opts ...option) *bundle {
	t.Helper()
	return setupOn(t, nil, opts...)
}

// setupOn is setup on the given emulators (nil: the embedded ones).
func setupOn(t testing.TB, emu *awslocal.Emulators, opts ...option) *bundle {
	t.Helper()
	tp := testTopic()
	for _, o := range opts {
		o(&tp)
	}
	top := topology.Topology{
		Topics:    []topology.Topic{tp},
		Producers: []topology.Producer{{Source: "shop", Types: []string{"order.*"}}},
		Routes:    []topology.Route{{Pattern: "order.*", Topics: []string{topicName}}},
	}
	envOpts := []awslocaltest.EnvOption{awslocaltest.WithTopology(top)}
	if emu != nil {
		envOpts = append(envOpts, awslocaltest.WithEmulators(emu))
	}
	env := awslocaltest.NewEnv(t, envOpts...)
	events := env.Events()
	q := env.Queue(topicName)
	rec := newRecorder()
	metrics := &testkit.Buffer{}
	// Small enough that tests can claim-check a payload.
	icfg := wiretest.IngestConfig(t, env, wiretest.Opts{Settings: map[string]string{wire.EnvClaimCheckBytes: "512"}})
	// The producer runs on a valid topology where a test bends the
	// consumer's timing past what Validate allows.
	icfg.Topology = icfg.Topology.Clone()
	vt := &icfg.Topology.Topics[0].VisibilityTimeout
	*vt = max(*vt, icfg.Topology.Topics[0].ConsumerTimeout)
	ing, err := ingestfn.New(icfg, ingestfn.Clients{DynamoDB: env.DynamoDB, SQS: env.SQS, S3: env.S3}, wire.Runtime{})
	require.NoError(t, err)
	b := &bundle{
		env: env, topic: tp, q: q, events: events, handler: rec, metrics: metrics,
		ingest: ing,
		cfg:    consume.Config{Topic: tp, Backoff: consume.Backoff{Base: time.Second, Cap: 30 * time.Second, Jitter: -1}},
		deps: consume.Deps{
			Handler:  rec,
			Rows:     events,
			Queue:    &sqsqueue.Source{Client: env.SQS, URL: q.URL, DLQURL: q.DLQURL, FIFO: tp.FIFO},
			Payloads: &s3blob.S3{Client: env.S3},
			Metrics:  &metric.Emitter{W: metrics},
		},
	}
	b.rebuild(t, nil)
	return b
}

// rebuild builds the bundle's consumer again, with its config and
// dependencies adjusted by mod (nil: as they are).
func (b *bundle) rebuild(t testing.TB, mod func(*consume.Config, *consume.Deps)) {
	t.Helper()
	if mod != nil {
		mod(&b.cfg, &b.deps)
	}
	c, err := consume.New(b.cfg, b.deps)
	require.NoError(t, err)
	b.consumer = c
}

// key is the storage key of an acme event (the test producer is internal).
func key(id string) string { return "acme/" + id }

// envelopeJSON is an order event; subject orders FIFO groups.
func envelopeJSON(id, subject string, payload any) []byte {
	m := map[string]any{
		"id": id, "tenantId": "acme", "type": "order.created", "source": "shop",
		"timestamp": time.Now().UTC().Add(-time.Second).Format(time.RFC3339Nano), "payload": payload,
	}
	if subject != "" {
		m["subject"] = subject
	}
	return []byte(testkit.MustJSON(m))
}

// publish ingests an event the way producers do: ledger item, outbox row,
// message on the topic queue.
func (b *bundle) publish(t testing.TB, id, subject string) {
	t.Helper()
	res, err := b.ingest.Publish(context.Background(), envelopeJSON(id, subject, map[string]any{"order": id}))
	require.NoError(t, err)
	require.Equal(t, envelope.StatusEnqueued, res.Status, "%+v", res)
}

// receive takes up to max messages off the topic queue (like the event
// source mapping, they stay in flight).
func (b *bundle) receive(t testing.TB, max int, wait time.Duration) []sqstypes.Message {
	t.Helper()
	return b.env.ReceiveAll(context.Background(), b.q.URL, max, wait)
}

// lambdaEvent is the SQS event Lambda builds from received messages.
// invoke runs the consumer on msgs with a Lambda-like deadline (the topic's
// consumer timeout), then deletes what it did not report, as the event
// source mapping does. It returns the reported message ids.
func (b *bundle) invoke(t testing.TB, msgs []sqstypes.Message) map[string]bool {
	t.Helper()
	failed, err := b.tryInvoke(msgs)
	require.NoError(t, err)
	return failed
}

// tryInvoke is invoke for goroutines other than the test's.
func (b *bundle) tryInvoke(msgs []sqstypes.Message) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), b.topic.ConsumerTimeout)
	defer cancel()
	resp, err := b.consumer.Handle(ctx, lambdalocal.SQSEvent(b.q.ARN, msgs))
	if err != nil {
		return nil, err
	}
	failed, err := lambdalocal.FailedItems(msgs, resp)
	if err != nil {
		return nil, err
	}
	return failed, b.ack(msgs, failed)
}

func (b *bundle) ack(msgs []sqstypes.Message, failed map[string]bool) error {
	var entries []sqstypes.DeleteMessageBatchRequestEntry
	for _, m := range msgs {
		if !failed[aws.ToString(m.MessageId)] {
			entries = append(entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(len(entries))), ReceiptHandle: m.ReceiptHandle})
		}
	}
	for len(entries) > 0 {
		n := min(10, len(entries))
		if _, err := b.env.Emulators.SQS().DeleteMessageBatch(context.Background(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(b.q.URL), Entries: entries[:n]}); err != nil {
			return err
		}
		entries = entries[n:]
	}
	return nil
}

func (b *bundle) row(t testing.TB, eventID string) outbox.Row {
	t.Helper()
	_, rows, err := b.events.Load(context.Background(), key(eventID))
	require.NoError(t, err)
	for _, r := range rows {
		if r.Topic == topicName {
			return r
		}
	}
	t.Fatalf("no %s row for %s", topicName, eventID)
	return outbox.Row{}
}

func eventIDOf(t testing.TB, m sqstypes.Message) string {
	t.Helper()
	v, ok := m.MessageAttributes[outbox.AttrEventID]
	require.True(t, ok, "message without eventId attribute")
	return aws.ToString(v.StringValue)
}

// recorder is a topic handler that records its side effects: calls counts
// every run, effects only successful ones.
type recorder struct {
	mu      sync.Mutex
	calls   map[string]int
	effects map[string]int
	order   []string
	// fail decides a run's error (nil: succeed); call is 1 on the first run
	// for the event.
	fail func(m consume.Message, call int) error
	// hold, when set, runs before fail (to keep a handler busy).
	hold func(ctx context.Context, m consume.Message, call int)
	// distinct counts the events with at least one side effect.
	distinct atomic.Int32
}

func newRecorder() *recorder {
	return &recorder{calls: map[string]int{}, effects: map[string]int{}}
}

func (r *recorder) Handle(ctx context.Context, m consume.Message) error {
	r.mu.Lock()
	r.calls[m.Event.ID]++
	call := r.calls[m.Event.ID]
	r.order = append(r.order, m.Event.ID)
	hold, fail := r.hold, r.fail
	r.mu.Unlock()
	if hold != nil {
		hold(ctx, m, call)
	}
	if fail != nil {
		if err := fail(m, call); err != nil {
			return err
		}
	}
	r.mu.Lock()
	r.effects[m.Event.ID]++
	if r.effects[m.Event.ID] == 1 {
		r.distinct.Add(1)
	}
	r.mu.Unlock()
	return nil
}

func (r *recorder) counts() (calls, effects map[string]int, order []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	calls, effects = map[string]int{}, map[string]int{}
	for k, v := range r.calls {
		calls[k] = v
	}
	for k, v := range r.effects {
		effects[k] = v
	}
	return calls, effects, append([]string(nil), r.order...)
}

// sum adds up a metric over every line.
func sum(lines []map[string]any, name string) float64 {
	total := 0.0
	for _, l := range lines {
		if v, ok := l[name].(float64); ok {
			total += v
		}
	}
	return total
}

type sqsMessage = sqstypes.Message

// seed stores n enqueued outbox rows with BatchWriteItem and sends their
// messages with SendMessageBatch: the state ingest leaves behind, without
// paying one transaction per event (the load test and the benchmark need
// thousands). The clients used are outside the Env's call counter.
func (b *bundle) seed(t testing.TB, prefix string, n int) []string {
	t.Helper()
	ctx := context.Background()
	ddb, sq := b.env.Emulators.DynamoDB(), b.env.Emulators.SQS()
	now := time.Now().UTC()
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("%s_%05d", prefix, i)
	}
	for start := 0; start < n; start += 12 {
		var writes []ddbtypes.WriteRequest
		for _, id := range ids[start:min(start+12, n)] {
			row, err := attributevalue.MarshalMap(map[string]any{
				"pk": dynamo.EventPK(key(id)), "sk": dynamo.DispatchSK(topicName),
				"eventId": id, "topic": topicName, "tenantId": "acme", "type": "order.created",
				"status":   "enqueued", // not in the sweeper index
				"attempts": 0, "maxAttempts": 5, "nextRetryAt": 0, "leaseUntil": 0, "leaseOwner": "", "lastError": "",
				"createdAt": dynamo.FormatTime(now), "updatedAt": dynamo.FormatTime(now), "expiresAt": now.Add(24 * time.Hour).Unix(),
			})
			require.NoError(t, err)
			// Rows never exist without their ledger item.
			led, err := attributevalue.MarshalMap(map[string]any{
				"pk": dynamo.EventPK(key(id)), "sk": dynamo.LedgerSK, "eventId": id, "tenantId": "acme", "type": "order.created",
				"source": "shop", "topics": []string{topicName}, "payloadHash": "h", "status": "received",
				"createdAt": dynamo.FormatTime(now), "expiresAt": now.Add(24 * time.Hour).Unix(),
			})
			require.NoError(t, err)
			writes = append(writes, ddbtypes.WriteRequest{PutRequest: &ddbtypes.PutRequest{Item: row}}, ddbtypes.WriteRequest{PutRequest: &ddbtypes.PutRequest{Item: led}})
		}
		for len(writes) > 0 {
			out, err := ddb.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]ddbtypes.WriteRequest{b.env.Resources.EventsTable: writes}})
			require.NoError(t, err)
			writes = out.UnprocessedItems[b.env.Resources.EventsTable]
		}
	}
	b.send(t, sq, ids)
	return ids
}

// send puts the messages of ids on the topic queue, as ingest would.
func (b *bundle) send(t testing.TB, sq *sqs.Client, ids []string) {
	t.Helper()
	ctx := context.Background()
	for start := 0; start < len(ids); start += 10 {
		var entries []sqstypes.SendMessageBatchRequestEntry
		for i, id := range ids[start:min(start+10, len(ids))] {
			body := envelopeJSON(id, "", map[string]any{"order": id})
			entries = append(entries, sqstypes.SendMessageBatchRequestEntry{
				Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(string(body)),
				MessageAttributes: sqsqueue.Attributes(outbox.Message{Topic: topicName, Key: key(id), EventID: id, TenantID: "acme", Type: "order.created"}),
			})
		}
		out, err := sq.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(b.q.URL), Entries: entries})
		require.NoError(t, err)
		require.Empty(t, out.Failed)
	}
}

func sendInput(url, body string, attrs map[string]sqstypes.MessageAttributeValue) *sqs.SendMessageInput {
	return &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body), MessageAttributes: attrs}
}

func outboxMessage() outbox.Message {
	return outbox.Message{Topic: topicName, EventID: "evt_1", TenantID: "acme", Type: "order.created", ReplayOf: "inc_1"}
}
