package dlqarchiver_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// BenchmarkArchiveBatch archives one DLQ batch of ten consumer-sent dead
// letters (errorCode attributes present, small bodies): ns/op is one batch.
// aws-calls/message counts the AWS calls per dead letter (the incident read
// and conditional write, the dispatch row's dlq mark); the alerter is
// in-process here, SNS adds one Publish per new incident.
func BenchmarkArchiveBatch(b *testing.B) {
	bd := setup(b)
	ctx := context.Background()
	var msgs []events.SQSMessage
	for i := range 10 {
		id := fmt.Sprintf("evt_bench_%d", i)
		body := bd.commit(b, id, "")
		msgs = append(msgs, dead("", string(body), attrs(outbox.AttrTopic, topic, outbox.AttrErrorCode, "subscriber_rejected", outbox.AttrErrorMessage, "422"), bd))
	}
	bd.env.Calls.Reset()
	n := 0
	for i := 0; b.Loop(); i++ {
		batch := make([]events.SQSMessage, len(msgs))
		for j, m := range msgs {
			m.MessageId = fmt.Sprintf("m-%d-%d", i, j) // a new dead letter each time: the incident reopens
			batch[j] = m
		}
		resp, err := bd.arch.Handle(ctx, events.SQSEvent{Records: batch})
		if err != nil || len(resp.BatchItemFailures) > 0 {
			b.Fatalf("archive: %v %+v", err, resp)
		}
		n += len(batch)
	}
	b.ReportMetric(float64(bd.env.Calls.Total())/float64(n), "aws-calls/message")
}
