package lambdalocal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/observe/costmodel"
	"github.com/siteswarm/eventplatform/internal/observe/iamcalls"
)

// pollWait is the long-poll wait of each receive. Short enough that Close
// returns promptly, long enough not to spin.
const pollWait = 1

// DefaultPollers poll a mapping that declares no maximum concurrency.
const DefaultPollers = 2

// StartQueueSource runs an SQS event source mapping for the function (served
// by the Lambda API at MappingsPath: List/Get/UpdateEventSourceMapping,
// Enabled and ScalingConfig.MaximumConcurrency honoured): like Lambda's,
// it gathers a batch (up to BatchSize messages, waiting at most
// BatchWindow), invokes the function, and deletes only the messages not
// reported in batchItemFailures. A function error, or a response naming an
// unknown item, fails the whole batch: the messages reappear after their
// visibility timeout and SQS redrives them to the DLQ after maxReceiveCount,
// exactly as in AWS.
func (s *Triggers) StartQueueSource(name string, src QueueSource) error {
	if src.QueueURL == "" {
		return errors.New("queue source without a queue URL")
	}
	if src.BatchSize <= 0 {
		src.BatchSize = 10
	}
	// A declared maximum is the mapping's ScalingConfig, as AWS reports
	// it; without one Lambda scales by itself, and locally DefaultPollers
	// poll.
	declared := src.MaxConcurrency
	if src.MaxConcurrency <= 0 {
		src.MaxConcurrency = DefaultPollers
	}
	m := s.addMapping(name, src)
	m.maxConc = max(declared, 0)
	s.spawn(m, src.MaxConcurrency)
	return nil
}

// poll is poller i of a mapping: it receives only while the mapping is
// enabled and its concurrency reaches i, as Lambda scales its pollers.
func (s *Triggers) poll(ctx context.Context, m *mapping, i int) {
	name, src := m.function, m.src
	// Lambda polls with the function's execution role: its receives and
	// deletes are the function's calls (the IAM check judges them).
	ctx = iamcalls.Via(costmodel.Attribute(ctx, name), iamcalls.ViaEventSource)
	log := s.log().With("function", name, "queue", src.QueueURL)
	for ctx.Err() == nil {
		if ok, changed := m.allows(i); !ok {
			select {
			case <-ctx.Done():
			case <-changed:
			}
			continue
		}
		msgs, err := s.receiveBatch(ctx, src, func() bool { ok, _ := m.allows(i); return ok })
		if err != nil {
			if ctx.Err() == nil {
				log.WarnContext(ctx, "lambdalocal: receive failed", "error", err)
				_ = clock.Sleep(ctx, time.Second)
			}
			continue
		}
		if len(msgs) == 0 {
			continue
		}
		failed, err := s.invokeBatch(ctx, name, src, msgs)
		if err != nil {
			log.WarnContext(ctx, "lambdalocal: batch failed; messages return after their visibility timeout", "messages", len(msgs), "error", err)
			continue
		}
		s.deleteSucceeded(ctx, src.QueueURL, msgs, failed)
	}
}

// receiveBatch long-polls until it has BatchSize messages, the batch window
// has passed since the first message, the queue is empty, or the mapping
// no longer lets this poller receive (allowed).
func (s *Triggers) receiveBatch(ctx context.Context, src QueueSource, allowed func() bool) ([]sqstypes.Message, error) {
	var (
		batch    []sqstypes.Message
		deadline time.Time
	)
	for len(batch) < src.BatchSize && allowed() {
		wait := int32(pollWait)
		if len(batch) > 0 {
			left := time.Until(deadline)
			if left <= 0 {
				break
			}
			wait = int32(min(left.Round(time.Second), time.Duration(pollWait)*time.Second) / time.Second)
		}
		out, err := s.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(src.QueueURL),
			MaxNumberOfMessages:         int32(min(10, src.BatchSize-len(batch))),
			WaitTimeSeconds:             wait,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			if len(batch) > 0 {
				return batch, nil
			}
			return nil, err
		}
		if len(batch) == 0 && len(out.Messages) > 0 {
			deadline = time.Now().Add(src.BatchWindow)
		}
		batch = append(batch, out.Messages...)
		if len(out.Messages) == 0 || src.BatchWindow <= 0 {
			break
		}
	}
	return batch, nil
}

func (s *Triggers) invokeBatch(ctx context.Context, name string, src QueueSource, msgs []sqstypes.Message) (map[string]bool, error) {
	ev := SQSEvent(src.QueueARN, msgs)
	payload, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	out, err := s.Functions.Invoke(ctx, name, payload)
	if err != nil {
		return nil, err
	}
	var resp events.SQSEventResponse
	if len(out) > 0 && string(out) != "null" {
		if err := json.Unmarshal(out, &resp); err != nil {
			return nil, fmt.Errorf("unparseable batch response: %w", err)
		}
	}
	return FailedItems(msgs, resp)
}

// FailedItems reads a partial batch response as Lambda's event source
// mapping does: the set of message ids to keep, or an error (the whole
// batch failed) when an identifier is empty or names no message of the
// batch.
func FailedItems(msgs []sqstypes.Message, resp events.SQSEventResponse) (map[string]bool, error) {
	ids := map[string]bool{}
	for _, m := range msgs {
		ids[aws.ToString(m.MessageId)] = true
	}
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		if !ids[f.ItemIdentifier] {
			return nil, fmt.Errorf("batchItemFailures names unknown item %q", f.ItemIdentifier)
		}
		failed[f.ItemIdentifier] = true
	}
	return failed, nil
}

func (s *Triggers) deleteSucceeded(ctx context.Context, url string, msgs []sqstypes.Message, failed map[string]bool) {
	var entries []sqstypes.DeleteMessageBatchRequestEntry
	for _, m := range msgs {
		if failed[aws.ToString(m.MessageId)] {
			continue
		}
		entries = append(entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(len(entries))), ReceiptHandle: m.ReceiptHandle})
	}
	for len(entries) > 0 {
		n := min(10, len(entries))
		out, err := s.SQS.DeleteMessageBatch(context.WithoutCancel(ctx), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries[:n]})
		if err != nil {
			s.log().WarnContext(ctx, "lambdalocal: delete failed; messages will be redelivered", "queue", url, "error", err)
		} else if len(out.Failed) > 0 {
			s.log().WarnContext(ctx, "lambdalocal: some deletes failed; messages will be redelivered", "queue", url, "failed", len(out.Failed))
		}
		entries = entries[n:]
	}
}

// SQSEvent builds the event Lambda's SQS event source delivers for msgs.
func SQSEvent(queueARN string, msgs []sqstypes.Message) events.SQSEvent {
	ev := events.SQSEvent{Records: make([]events.SQSMessage, 0, len(msgs))}
	for _, m := range msgs {
		rec := events.SQSMessage{
			MessageId:              aws.ToString(m.MessageId),
			ReceiptHandle:          aws.ToString(m.ReceiptHandle),
			Body:                   aws.ToString(m.Body),
			Md5OfBody:              aws.ToString(m.MD5OfBody),
			Md5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
			Attributes:             m.Attributes,
			EventSourceARN:         queueARN,
			EventSource:            "aws:sqs",
			AWSRegion:              awslocal.Region,
		}
		if len(m.MessageAttributes) > 0 {
			rec.MessageAttributes = map[string]events.SQSMessageAttribute{}
			for k, v := range m.MessageAttributes {
				rec.MessageAttributes[k] = events.SQSMessageAttribute{
					StringValue: v.StringValue,
					BinaryValue: v.BinaryValue,
					DataType:    aws.ToString(v.DataType),
				}
			}
		}
		ev.Records = append(ev.Records, rec)
	}
	return ev
}
