package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/s3blob"
	"github.com/siteswarm/eventplatform/internal/aws/sqsqueue"
	"github.com/siteswarm/eventplatform/internal/claimcheck"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/dlqarchiver"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/replay"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire/dlqarchiverfn"
	"github.com/siteswarm/eventplatform/internal/wire/wiretest"
)

const topic = topology.Billing

// platform is the real pipeline on the emulators: ingest, the topic queue
// and its DLQ, the real consumer runtime (internal/consume) with a handler
// that fails permanently while broken is set, the DLQ archiver (alerts to an
// SNS topic a queue subscribes to), the replay engine and the operator
// views, all built by the wire constructors the Lambdas use.
type platform struct {
	env       *awslocaltest.Env
	ingest    *ingest.Service
	consumer  *consume.Consumer
	archiver  *dlqarchiver.Archiver
	replay    *replay.Service
	views     *operator.Views
	events    *dynamo.Events
	incidents *dynamo.Incidents
	blobs     *s3blob.S3
	alertsURL string
	metrics   *testkit.Buffer
	// skew moves the replay and views clock (nanoseconds ahead of the
	// wall clock).
	skew atomic.Int64

	broken atomic.Bool
	mu     sync.Mutex
	// handled are the messages the handler completed.
	handled []consume.Message
}

func (p *platform) now() time.Time { return time.Now().Add(time.Duration(p.skew.Load())) }

func setupPlatform(t testing.TB, opts ...awslocaltest.EnvOption) *platform {
	t.Helper()
	ctx := context.Background()
	env := awslocaltest.NewEnv(t, opts...)
	p := &platform{env: env, metrics: &testkit.Buffer{}}

	// The alert topic, with a queue subscribed to read what operators get.
	tp, err := env.SNS.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(env.Prefix + "-alerts")})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = env.SNS.DeleteTopic(context.Background(), &sns.DeleteTopicInput{TopicArn: tp.TopicArn}) })
	q, err := env.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(env.Prefix + "-alerts-inbox")})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = env.SQS.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl}) })
	qa, err := env.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	require.NoError(t, err)
	_, err = env.SNS.Subscribe(ctx, &sns.SubscribeInput{TopicArn: tp.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(qa.Attributes["QueueArn"])})
	require.NoError(t, err)
	p.alertsURL = aws.ToString(q.QueueUrl)

	p.ingest = wiretest.Ingest(t, env, wiretest.Opts{})
	p.archiver = wiretest.Archiver(t, env, wiretest.Opts{
		Settings: map[string]string{dlqarchiverfn.EnvAlertTopicARN: aws.ToString(tp.TopicArn)},
		Metrics:  &metric.Emitter{W: p.metrics},
	})
	svc := wiretest.Replay(t, env, wiretest.Opts{Now: p.now})
	p.replay, p.views = svc.Replay, svc.Views

	p.events = env.Events()
	p.incidents = env.Incidents()
	p.blobs = &s3blob.S3{Client: env.S3}
	billing, _ := env.Topology.Topic(topic)
	p.consumer, err = consume.New(consume.Config{Topic: billing}, consume.Deps{
		Handler: consume.HandlerFunc(func(_ context.Context, m consume.Message) error {
			if p.broken.Load() {
				return consume.Permanent("subscriber_rejected", fmt.Errorf("subscriber answered 422: unknown invoice %s", m.Event.ID))
			}
			p.mu.Lock()
			p.handled = append(p.handled, m)
			p.mu.Unlock()
			return nil
		}),
		Rows:      p.events,
		Queue:     &sqsqueue.Source{Client: env.SQS, URL: env.Queue(topic).URL, DLQURL: env.Queue(topic).DLQURL, FIFO: billing.FIFO},
		Payloads:  p.blobs,
		Incidents: p.incidents,
		Metrics:   metric.Discard(),
	})
	require.NoError(t, err)
	return p
}

// publish ingests a billing event with the given payload.
func (p *platform) publish(t *testing.T, id string, payload []byte) {
	t.Helper()
	raw := fmt.Sprintf(`{"id":%q,"tenantId":"acme","type":"stripe.invoice.paid","source":"stripe","timestamp":"2026-12-02T11:59:00Z","payload":%s}`, id, payload)
	res, err := p.ingest.Publish(context.Background(), []byte(raw))
	require.NoError(t, err)
	require.Equal(t, envelope.StatusEnqueued, res.Status, "%+v", res.Error)
}

// pump plays an SQS event source mapping: it receives batches from url,
// invokes handle with the records as events.SQSEvent (source arn) and
// deletes the records not reported as failures, until want records were
// handled.
func (p *platform) pump(t *testing.T, url, arn string, want int, handle func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) {
	t.Helper()
	ctx := context.Background()
	handled := 0
	deadline := time.Now().Add(20 * time.Second)
	for handled < want {
		require.True(t, time.Now().Before(deadline), "only %d of %d messages arrived on %s", handled, want, url)
		// Through the kit's receive: a lost receive response (a contended
		// emulator) waits for its messages instead of failing the test.
		msgs := p.env.ReceiveAll(ctx, url, min(want-handled, 10), time.Until(deadline))
		if len(msgs) == 0 {
			continue
		}
		ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
		resp, err := handle(ictx, lambdalocal.SQSEvent(arn, msgs))
		cancel()
		require.NoError(t, err)
		failed := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		for _, m := range msgs {
			if !failed[aws.ToString(m.MessageId)] {
				_, err := p.env.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
				require.NoError(t, err)
			}
		}
		handled += len(msgs)
	}
}

func (p *platform) consume(t *testing.T, want int) {
	t.Helper()
	q := p.env.Queue(topic)
	p.pump(t, q.URL, q.ARN, want, p.consumer.Handle)
}

func (p *platform) archive(t *testing.T, want int) {
	t.Helper()
	q := p.env.Queue(topic)
	p.pump(t, q.DLQURL, q.DLQARN, want, p.archiver.Handle)
}

func (p *platform) row(t *testing.T, eventID string) outbox.Row {
	t.Helper()
	r, ok, err := p.events.Row(context.Background(), outbox.RowRef{Key: eventID, Topic: topic})
	require.NoError(t, err)
	require.True(t, ok)
	return r
}

func (p *platform) incident(t *testing.T, eventID string) incident.Incident {
	t.Helper()
	inc, err := p.incidents.Get(context.Background(), incident.ID(eventID, topic))
	require.NoError(t, err)
	return inc
}

// alerts returns the alert summaries delivered through SNS.
func (p *platform) alerts(t *testing.T) []dlqarchiver.Alert {
	t.Helper()
	var out []dlqarchiver.Alert
	for _, m := range p.env.ReceiveAll(context.Background(), p.alertsURL, 0, 0) {
		body := aws.ToString(m.Body)
		var note struct{ Message, Subject string }
		if json.Unmarshal([]byte(body), &note) == nil && note.Message != "" {
			body = note.Message // SNS notification envelope
		}
		var a dlqarchiver.Alert
		require.NoError(t, json.Unmarshal([]byte(body), &a), body)
		out = append(out, a)
	}
	return out
}

func TestEndToEndPoisonToIncidentToReplayToResolved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := setupPlatform(t)
	payload := []byte(`{"invoice":"in_123","amount_due":4200}`)

	// 1. The subscriber rejects the event: the consumer dead-letters it.
	p.broken.Store(true)
	p.publish(t, "evt_e2e", payload)
	p.consume(t, 1)
	p.archive(t, 1)

	inc := p.incident(t, "evt_e2e")
	require.Equal(t, incident.StatusOpen, inc.Status)
	require.Equal(t, "subscriber_rejected", inc.ErrorCode)
	require.Contains(t, inc.ErrorMessage, "subscriber answered 422")
	require.Equal(t, 1, inc.RetryCount)
	require.Equal(t, "acme", inc.TenantID)
	require.Equal(t, p.env.Queue(topic).DLQARN, inc.SourceQueue)
	var stored envelope.Event
	require.NoError(t, json.Unmarshal(inc.Body.Inline, &stored))
	require.JSONEq(t, string(payload), string(stored.Payload), "the incident keeps the payload")
	require.Equal(t, outbox.StatusDLQ, p.row(t, "evt_e2e").Status)

	alerts := p.alerts(t)
	require.Len(t, alerts, 1)
	require.Equal(t, inc.ID, alerts[0].IncidentID)
	require.Equal(t, "evt_e2e", alerts[0].EventID)
	require.Contains(t, alerts[0].ErrorMessage, "422")
	require.NotContains(t, testkit.MustJSON(alerts[0]), "in_123", "alerts never carry the payload")
	require.Contains(t, p.metrics.String(), `"IncidentsOpened":1`)
	require.Contains(t, p.metrics.String(), `"Topic":"billing.events"`)

	// 2. The handler is fixed; the operator replays the incident.
	p.broken.Store(false)
	sum, err := p.replay.Replay(ctx, replay.Request{IncidentIDs: []string{inc.ID}, Actor: "ops@example.com", Note: "subscriber fixed"})
	require.NoError(t, err)
	require.Equal(t, []string{inc.ID}, sum.Replayed)
	require.Empty(t, sum.Errors)
	require.Equal(t, incident.StatusRetrying, p.incident(t, "evt_e2e").Status)

	// 3. The consumer succeeds and attests the replay.
	p.consume(t, 1)
	require.Len(t, p.handled, 1)
	require.Equal(t, inc.ID, p.handled[0].ReplayOf)
	require.JSONEq(t, string(payload), string(p.handled[0].Event.Payload))

	done := p.incident(t, "evt_e2e")
	require.Equal(t, incident.StatusResolved, done.Status)
	require.Equal(t, "replay", done.ResolvedBy)
	require.False(t, done.ResolvedAt.IsZero())
	require.False(t, done.ReplayedAt.IsZero())
	var path []string
	for _, c := range done.History {
		path = append(path, string(c.To)+" by "+c.By)
	}
	require.Equal(t, []string{"open by dlq-archiver", "retrying by ops@example.com", "resolved by replay"}, path)
	require.Equal(t, outbox.StatusCompleted, p.row(t, "evt_e2e").Status)
	require.Empty(t, p.alerts(t), "a resolution raises no alert")
}

func TestReplayThatFailsAgainReopensTheSameIncident(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := setupPlatform(t)
	p.broken.Store(true)
	p.publish(t, "evt_again", []byte(`{"invoice":"in_9"}`))
	p.consume(t, 1)
	p.archive(t, 1)
	id := p.incident(t, "evt_again").ID

	// Replayed while the subscriber is still broken.
	sum, err := p.replay.Replay(ctx, replay.Request{IncidentIDs: []string{id}, Actor: "ops"})
	require.NoError(t, err)
	require.Equal(t, []string{id}, sum.Replayed)
	p.consume(t, 1)
	p.archive(t, 1)

	inc := p.incident(t, "evt_again")
	require.Equal(t, incident.StatusOpen, inc.Status)
	require.Equal(t, 2, inc.RetryCount)
	require.Equal(t, 1, inc.ReplayCount)
	page, err := p.incidents.List(ctx, incident.Filter{TenantID: "acme"})
	require.NoError(t, err)
	require.Len(t, page.Incidents, 1, "still one incident")
	last := inc.History[len(inc.History)-1]
	require.Equal(t, incident.StatusRetrying, last.From)
	require.Equal(t, incident.StatusOpen, last.To)

	alerts := p.alerts(t)
	require.Len(t, alerts, 2)
	slices.SortFunc(alerts, func(a, b dlqarchiver.Alert) int { return a.RetryCount - b.RetryCount })
	require.False(t, alerts[0].Reopened)
	require.True(t, alerts[1].Reopened)
	require.Equal(t, 2, alerts[1].RetryCount)
}

func TestLargePayloadIncidentKeepsItInS3AndReplaysIdenticalBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := setupPlatform(t)
	// 200 KiB, with whitespace and key order a re-encoding would change.
	var b strings.Builder
	b.WriteString(`{ "z": 1,  "lines": [`)
	for i := 0; b.Len() < 200<<10; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(fmt.Sprintf("line %06d %s", i, strings.Repeat("x", 80))))
	}
	b.WriteString("],\n \"a\": true }")
	payload := []byte(b.String())

	p.broken.Store(true)
	p.publish(t, "evt_big", payload)
	p.consume(t, 1)
	p.archive(t, 1)

	inc := p.incident(t, "evt_big")
	require.NotEmpty(t, inc.Body.PayloadKey)
	require.True(t, strings.HasPrefix(inc.Body.PayloadKey, "incidents/acme/"+inc.ID+"/"), inc.Body.PayloadKey)
	kept, err := p.blobs.Get(ctx, p.env.Resources.Bucket, inc.Body.PayloadKey)
	require.NoError(t, err)
	require.Equal(t, payload, kept, "the incident's S3 copy is the payload, byte for byte")
	require.Less(t, len(inc.Body.Inline), 64<<10, "the item itself stays small")

	view, err := p.views.ViewIncident(ctx, inc.ID)
	require.NoError(t, err)
	require.Equal(t, payload, []byte(view.Payload))

	p.broken.Store(false)
	sum, err := p.replay.Replay(ctx, replay.Request{IncidentIDs: []string{inc.ID}})
	require.NoError(t, err)
	require.Equal(t, []string{inc.ID}, sum.Replayed, "%+v", sum)

	// The replayed message is claim-checked like the original.
	msgs := p.env.ReceiveAll(ctx, p.env.Queue(topic).URL, 1, 5*time.Second)
	require.Len(t, msgs, 1)
	ev, perr := envelope.ParseMessage([]byte(aws.ToString(msgs[0].Body)))
	require.Nil(t, perr)
	require.NotNil(t, ev.PayloadRef)
	require.Less(t, len(aws.ToString(msgs[0].Body)), 4<<10)
	sent, err := claimcheck.Load(ctx, p.blobs, *ev.PayloadRef)
	require.NoError(t, err)
	require.Equal(t, payload, sent, "replay re-sends identical bytes")
	_, err = p.env.SQS.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(p.env.Queue(topic).URL), ReceiptHandle: msgs[0].ReceiptHandle, VisibilityTimeout: 0,
	})
	require.NoError(t, err)

	p.consume(t, 1)
	require.Len(t, p.handled, 1)
	require.Equal(t, payload, []byte(p.handled[0].Event.Payload), "the consumer sees identical bytes")
	require.Equal(t, incident.StatusResolved, p.incident(t, "evt_big").Status)
}
