package consume_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/s3blob"
	"github.com/siteswarm/eventplatform/internal/aws/sqsqueue"
	"github.com/siteswarm/eventplatform/internal/claimcheck"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// BenchmarkConsume measures the consumer runtime against the emulators on
// the success path: one op is one Lambda invocation with a batch of
// messages already on the queue (outbox rows enqueued, as ingest leaves
// them) and a handler that does nothing, so the numbers are the runtime's
// own cost. msgs/s is the runtime's throughput within one invocation
// (messages / handler wall time); aws-calls/msg counts the runtime's AWS
// API calls per message (the event source mapping's receive and delete are
// not the runtime's and are not counted); p50-ms/p99-ms are per batch.
func BenchmarkConsume(b *testing.B) {
	cases := []struct {
		name       string
		batch      int
		claimCheck bool
	}{
		{"batch-10", 10, false},
		{"batch-1", 1, false},
		{"batch-10-claim-checked", 10, true},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			bd := setup(b)
			bd.rebuild(b, func(_ *consume.Config, d *consume.Deps) { d.Metrics = metric.Discard() })
			ctx := context.Background()
			var (
				took  []time.Duration
				msgs  int
				calls int
			)
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				ids := bd.seedBatch(b, fmt.Sprintf("evt_bench_%d", i), tc.batch, tc.claimCheck)
				batch := bd.receiveUncounted(b, tc.batch)
				before := bd.env.Calls.Total()
				b.StartTimer()
				start := time.Now()
				failed, err := bd.tryHandle(ctx, batch)
				took = append(took, time.Since(start))
				b.StopTimer()
				if err != nil || len(failed) > 0 {
					b.Fatalf("batch failed: %v %v", err, failed)
				}
				calls += bd.env.Calls.Total() - before
				msgs += len(batch)
				if err := bd.ack(batch, nil); err != nil {
					b.Fatal(err)
				}
				bd.forget(b, ids)
				b.StartTimer()
			}
			total := time.Duration(0)
			for _, d := range took {
				total += d
			}
			b.ReportMetric(float64(msgs)/total.Seconds(), "msgs/s")
			b.ReportMetric(float64(calls)/float64(msgs), "aws-calls/msg")
			b.ReportMetric(ms(pct(took, 50)), "p50-ms")
			b.ReportMetric(ms(pct(took, 99)), "p99-ms")
		})
	}
}

// tryHandle invokes the consumer without deleting anything.
func (b *bundle) tryHandle(ctx context.Context, msgs []sqstypes.Message) ([]string, error) {
	lctx, cancel := context.WithTimeout(ctx, b.topic.ConsumerTimeout)
	defer cancel()
	resp, err := b.consumer.Handle(lctx, lambdalocal.SQSEvent(b.q.ARN, msgs))
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	return failed, err
}

// seedBatch stores n enqueued rows and sends their messages, with the
// payload claim-checked to S3 when asked, all outside the call counter.
func (b *bundle) seedBatch(tb testing.TB, prefix string, n int, claimCheck bool) []string {
	tb.Helper()
	if !claimCheck {
		return b.seed(tb, prefix, n)
	}
	ctx := context.Background()
	checker := claimcheck.Checker{Store: &s3blob.S3{Client: b.env.Emulators.S3()}, Bucket: b.env.Resources.Bucket}
	ids := b.seed(tb, prefix, n)
	// Replace the inline messages by claim-checked ones.
	b.receiveUncounted(tb, n)
	sq := b.env.Emulators.SQS()
	_, err := sq.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(b.q.URL)})
	if err != nil {
		tb.Fatal(err)
	}
	var entries []sqstypes.SendMessageBatchRequestEntry
	for i, id := range ids {
		payload := []byte(`{"blob":"` + strings.Repeat("x", 70<<10) + `"}`)
		ref, err := checker.Put(ctx, "acme", id, payload)
		if err != nil {
			tb.Fatal(err)
		}
		body, err := envelope.Event{ID: id, TenantID: "acme", Type: "order.created", Source: "shop", Timestamp: time.Now().UTC(), PayloadRef: ref}.Marshal()
		if err != nil {
			tb.Fatal(err)
		}
		entries = append(entries, sqstypes.SendMessageBatchRequestEntry{
			Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(string(body)),
			MessageAttributes: sqsqueue.Attributes(outbox.Message{Topic: topicName, EventID: id, TenantID: "acme", Type: "order.created"}),
		})
	}
	if _, err := sq.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(b.q.URL), Entries: entries}); err != nil {
		tb.Fatal(err)
	}
	return ids
}

// receiveUncounted receives exactly n messages with a client outside the
// call counter (the event source mapping's work, not the runtime's).
func (b *bundle) receiveUncounted(tb testing.TB, n int) []sqstypes.Message {
	tb.Helper()
	var out []sqstypes.Message
	sq := b.env.Emulators.SQS()
	for len(out) < n {
		resp, err := sq.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(b.q.URL), MaxNumberOfMessages: int32(min(10, n-len(out))), WaitTimeSeconds: 1,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, resp.Messages...)
	}
	return out
}

// forget deletes the benchmark's rows so the table (and minidyn's cost)
// stays the same size from one iteration to the next.
func (b *bundle) forget(tb testing.TB, ids []string) {
	tb.Helper()
	var writes []ddbtypes.WriteRequest
	for _, id := range ids {
		writes = append(writes, ddbtypes.WriteRequest{DeleteRequest: &ddbtypes.DeleteRequest{Key: map[string]ddbtypes.AttributeValue{
			"pk": &ddbtypes.AttributeValueMemberS{Value: dynamo.EventPK(id)},
			"sk": &ddbtypes.AttributeValueMemberS{Value: dynamo.DispatchSK(topicName)},
		}}})
	}
	for chunk := range slices.Chunk(writes, 25) {
		if _, err := b.env.Emulators.DynamoDB().BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{
			RequestItems: map[string][]ddbtypes.WriteRequest{b.env.Resources.EventsTable: chunk},
		}); err != nil {
			tb.Fatal(err)
		}
	}
}

func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkConsumeThroughput sets the consumer's throughput at batch 10
// against the bare SQS work on the same queue in the same run: raw-msgs/s
// drains messages with ReceiveMessage (10) and DeleteMessageBatch alone;
// msgs/s drains the same number as the event source mapping drives the
// consumer (receive 10, one invocation — claim, handler, completion per
// message, side by side — then delete what it did not report); ratio is
// msgs/s over raw-msgs/s (issue 25's goal: at least 0.8). One poller each,
// the two drains alternating which goes first. The handler does nothing:
// what is measured is the runtime's own cost per message.
func BenchmarkConsumeThroughput(b *testing.B) {
	const n, batch = 200, 10
	bd := setup(b)
	bd.rebuild(b, func(_ *consume.Config, d *consume.Deps) { d.Metrics = metric.Discard() })
	ctx := context.Background()
	sq := bd.env.Emulators.SQS()
	receive := func() []sqstypes.Message {
		resp, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(bd.q.URL), MaxNumberOfMessages: batch, WaitTimeSeconds: 1,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			b.Fatal(err)
		}
		return resp.Messages
	}
	raw := func() time.Duration {
		start := time.Now()
		for done := 0; done < n; {
			msgs := receive()
			if err := bd.ack(msgs, nil); err != nil {
				b.Fatal(err)
			}
			done += len(msgs)
		}
		return time.Since(start)
	}
	consumer := func() time.Duration {
		start := time.Now()
		for done := 0; done < n; {
			msgs := receive()
			if _, err := bd.tryInvoke(msgs); err != nil {
				b.Fatal(err)
			}
			done += len(msgs)
		}
		return time.Since(start)
	}
	var rawTook, consTook time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		// Rows and messages: whichever drain goes first takes these
		// messages (the raw one reads no rows), the second the same ids
		// sent again.
		ids := bd.seed(b, fmt.Sprintf("evt_tp_%d", i), n)
		b.StartTimer()
		if i%2 == 0 {
			consTook += consumer()
			b.StopTimer()
			bd.send(b, sq, ids)
			b.StartTimer()
			rawTook += raw()
		} else {
			rawTook += raw()
			b.StopTimer()
			bd.send(b, sq, ids)
			b.StartTimer()
			consTook += consumer()
		}
		b.StopTimer()
		bd.forget(b, ids)
		b.StartTimer()
	}
	rawRate := float64(b.N*n) / rawTook.Seconds()
	consRate := float64(b.N*n) / consTook.Seconds()
	b.ReportMetric(rawRate, "raw-msgs/s")
	b.ReportMetric(consRate, "msgs/s")
	b.ReportMetric(consRate/rawRate, "ratio")
}
