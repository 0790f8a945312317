package consume_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
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

// BenchmarkConsumeThroughput drains n messages with the consumer (as the
// event source mapping drives it: receive a batch, invoke, delete the
// successes) and, side by side in the same run, n like messages from a
// second queue with ReceiveMessage and DeleteMessageBatch alone (the raw
// rate: what a poller does without the consumer's work). Both drains run
// at once, so the machine's load (a shared 2-core machine) weighs on both
// alike; ratio is the consumer's rate ÷ the raw one, over every iteration.
// On the emulators every call is CPU on that machine, and the consumer's
// two conditional writes per message are most of it; docs/consumers.md
// estimates the same work on AWS, per concurrent invocation.
func BenchmarkConsumeThroughput(b *testing.B) {
	const n, batch = 200, 10
	bd := setup(b)
	bd.rebuild(b, func(_ *consume.Config, d *consume.Deps) { d.Metrics = metric.Discard() })
	ctx := context.Background()
	sq := bd.env.Emulators.SQS()
	// A receive whose answer is lost (an SDK retry on a loaded machine)
	// hides its messages for the queue's visibility timeout: 30 s by
	// default stalled the raw loop once (6.7 raw messages a second); 2 s
	// bounds that.
	rawQ, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(bd.env.Prefix + "-raw-throughput"),
		Attributes: map[string]string{string(sqstypes.QueueAttributeNameVisibilityTimeout): "2"}})
	if err != nil {
		b.Fatal(err)
	}
	receive := func(url string) []sqstypes.Message {
		resp, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: batch, WaitTimeSeconds: 1,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			b.Error(err)
		}
		return resp.Messages
	}
	raw := func() (time.Duration, int) {
		start, done := time.Now(), 0
		for done < n && !b.Failed() {
			msgs := receive(aws.ToString(rawQ.QueueUrl))
			var entries []sqstypes.DeleteMessageBatchRequestEntry
			for i, m := range msgs {
				entries = append(entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
			}
			if len(entries) > 0 {
				out, err := sq.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: rawQ.QueueUrl, Entries: entries})
				if err != nil {
					b.Error(err)
				} else if len(out.Failed) > 0 {
					b.Errorf("raw delete: %d of %d failed", len(out.Failed), len(entries))
				}
			}
			done += len(msgs)
		}
		return time.Since(start), done
	}
	consumer := func() (time.Duration, int) {
		start, done := time.Now(), 0
		for done < n && !b.Failed() {
			msgs := receive(bd.q.URL)
			if _, err := bd.tryInvoke(msgs); err != nil {
				b.Error(err)
			}
			done += len(msgs)
		}
		return time.Since(start), done
	}
	var rawTook, consTook time.Duration
	var rawN, consN int
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		ids := bd.seed(b, fmt.Sprintf("evt_tp_%d", i), n)
		for start := 0; start < n; start += 10 {
			var entries []sqstypes.SendMessageBatchRequestEntry
			for j, id := range ids[start:min(start+10, n)] {
				entries = append(entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)),
					MessageBody: aws.String(string(envelopeJSON(id, "", map[string]any{"order": id})))})
			}
			if _, err := sq.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: rawQ.QueueUrl, Entries: entries}); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		var wg sync.WaitGroup
		wg.Go(func() {
			d, k := raw()
			rawTook, rawN = rawTook+d, rawN+k
		})
		d, k := consumer()
		consTook, consN = consTook+d, consN+k
		wg.Wait()
		b.StopTimer()
		bd.forget(b, ids)
		b.StartTimer()
	}
	rawRate := float64(rawN) / rawTook.Seconds()
	consRate := float64(consN) / consTook.Seconds()
	b.ReportMetric(rawRate, "raw-msgs/s")
	b.ReportMetric(consRate, "msgs/s")
	b.ReportMetric(consRate/rawRate, "ratio")
}
