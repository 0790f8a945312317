package sqsqueue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/kit/canonjson"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// Source is a topic queue as its consumer uses it: visibility changes for
// retries, and the topic's dead-letter queue for poison messages.
type Source struct {
	Client *sqs.Client
	// URL is the topic queue, DLQURL its redrive dead-letter queue.
	URL    string
	DLQURL string
	// FIFO: the DLQ is FIFO too (SQS requires it), so dead letters need a
	// group and a deduplication id.
	FIFO bool
}

var _ consume.Queue = (*Source)(nil)

// maxMessageAttributes is SQS's limit per message.
const maxMessageAttributes = 10

// maxVisibility is SQS's visibility timeout limit (12 h).
const maxVisibility = 12 * time.Hour

// Delay changes the visibility of in-flight messages, ten per
// ChangeMessageVisibilityBatch call. Delays round up to whole seconds
// (SQS's unit), so a message never returns earlier than asked.
//
// A call that fails (throttled, a 5xx) and entries SQS failed on its side
// are tried again, up to delayAttempts times with short waits inside the
// caller's context: a delay left unset keeps a failed message invisible for
// the queue's whole visibility timeout instead of its backoff (reliability
// scenario 4's p99). Entries refused for what they are (a stale receipt
// handle, a message no longer in flight) are not.
func (s *Source) Delay(ctx context.Context, ds []consume.Delay) error {
	var errs []error
	for chunk := range slices.Chunk(ds, 10) {
		errs = append(errs, s.delayChunk(ctx, chunk)...)
	}
	return errors.Join(errs...)
}

// delayAttempts bounds the tries of one ChangeMessageVisibilityBatch chunk.
const delayAttempts = 4

func (s *Source) delayChunk(ctx context.Context, chunk []consume.Delay) []error {
	pending := chunk
	for attempt := 1; ; attempt++ {
		entries := make([]sqstypes.ChangeMessageVisibilityBatchRequestEntry, len(pending))
		for i, d := range pending {
			entries[i] = sqstypes.ChangeMessageVisibilityBatchRequestEntry{
				Id:                aws.String(strconv.Itoa(i)),
				ReceiptHandle:     aws.String(d.ReceiptHandle),
				VisibilityTimeout: VisibilitySeconds(d.Visibility),
			}
		}
		var (
			errs  []error
			again []consume.Delay
		)
		out, err := s.Client.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(s.URL), Entries: entries})
		if err != nil {
			errs = append(errs, fmt.Errorf("sqs change visibility of %d messages: %w", len(pending), err))
			again = pending
		} else {
			for _, f := range out.Failed {
				i, _ := strconv.Atoi(aws.ToString(f.Id))
				id := ""
				if i >= 0 && i < len(pending) {
					id = pending[i].MessageID
					if retryableEntry(f) {
						again = append(again, pending[i])
					}
				}
				errs = append(errs, fmt.Errorf("sqs change visibility of %s: %s: %s", id, aws.ToString(f.Code), aws.ToString(f.Message)))
			}
		}
		if len(again) == 0 || attempt == delayAttempts {
			return errs
		}
		select {
		case <-ctx.Done():
			return errs
		case <-time.After(time.Duration(attempt*attempt) * 50 * time.Millisecond):
		}
		pending = again
	}
}

// retryableEntry: SQS failed the entry on its side, not for what it is.
func retryableEntry(f sqstypes.BatchResultErrorEntry) bool {
	switch aws.ToString(f.Code) {
	case "ReceiptHandleIsInvalid", "MessageNotInflight", "InvalidParameterValue", "AWS.SimpleQueueService.MessageNotInflight":
		return false
	}
	return !f.SenderFault
}

// VisibilitySeconds is a delay as SQS's whole seconds, rounded up and
// bounded to 0..12 h.
func VisibilitySeconds(d time.Duration) int32 {
	d = min(max(d, 0), maxVisibility)
	return int32((d + time.Second - 1) / time.Second)
}

// DeadLetter sends m to the DLQ with its body and message attributes
// unchanged, plus errorCode, errorMessage, failedAt (RFC 3339) and, when
// the reason has one, errorSummary. SQS
// allows ten attributes: if the message already carries more than the
// reason leaves room for, foreign ones are dropped first and the platform's
// kept.
func (s *Source) DeadLetter(ctx context.Context, m events.SQSMessage, r consume.Reason) error {
	if s.DLQURL == "" {
		return errors.New("sqs dead-letter: no DLQ configured")
	}
	attrs := make(map[string]sqstypes.MessageAttributeValue, len(m.MessageAttributes)+len(reasonAttrs))
	for k, v := range m.MessageAttributes {
		// The list values are reserved by SQS (the Lambda event carries
		// them empty); sending them would be rejected.
		attrs[k] = sqstypes.MessageAttributeValue{
			DataType:    aws.String(v.DataType),
			StringValue: v.StringValue,
			BinaryValue: v.BinaryValue,
		}
	}
	// A dead letter is the event: a carried completion's mark (a copy
	// that must not run the handler) does not go with it.
	delete(attrs, outbox.AttrCompletionOf)
	trimAttributes(attrs, maxMessageAttributes-len(reasonAttrs))
	failedAt := r.FailedAt
	if failedAt.IsZero() {
		failedAt = time.Now()
	}
	code := r.Code
	if code == "" {
		code = consume.CodeHandlerRejected
	}
	attrs[outbox.AttrErrorCode] = str(canonjson.SQSText(code))
	attrs[outbox.AttrErrorMessage] = str(canonjson.SQSText(orDash(r.Message)))
	attrs[outbox.AttrFailedAt] = str(failedAt.UTC().Format(time.RFC3339))
	if r.Summary != "" {
		attrs[outbox.AttrErrorSummary] = str(canonjson.SQSText(r.Summary))
	}
	in := &sqs.SendMessageInput{
		QueueUrl:          aws.String(s.DLQURL),
		MessageBody:       aws.String(m.Body),
		MessageAttributes: attrs,
	}
	if th := m.Attributes[string(sqstypes.MessageSystemAttributeNameAWSTraceHeader)]; th != "" {
		in.MessageSystemAttributes = map[string]sqstypes.MessageSystemAttributeValue{
			string(sqstypes.MessageSystemAttributeNameForSendsAWSTraceHeader): {DataType: aws.String("String"), StringValue: aws.String(th)},
		}
	}
	group := m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)]
	if !s.FIFO {
		// A standard DLQ is a fair queue too (the archiver drains it): the
		// message's group, else its tenant.
		if group == "" {
			group = TenantGroup(aws.ToString(m.MessageAttributes[outbox.AttrTenantID].StringValue))
		}
		in.MessageGroupId = aws.String(group)
	} else {
		if group == "" {
			group = "dead-letters"
		}
		in.MessageGroupId = aws.String(group)
		// One dead letter per received message, even if the send is retried
		// (a hand-built record without an id dedupes on its body).
		id := m.MessageId
		if id == "" {
			id = "body:" + envelope.SHA256Hex([]byte(m.Body))
		}
		in.MessageDeduplicationId = aws.String(dedupID("dlq:" + id))
	}
	if _, err := s.Client.SendMessage(ctx, in); err != nil {
		return fmt.Errorf("sqs dead-letter %s: %w", m.MessageId, err)
	}
	return nil
}

// reasonAttrs are what DeadLetter adds.
var reasonAttrs = []string{outbox.AttrErrorCode, outbox.AttrErrorMessage, outbox.AttrErrorSummary, outbox.AttrFailedAt}

// platformAttrs survive trimming.
var platformAttrs = []string{outbox.AttrEventKey, outbox.AttrEventID, outbox.AttrTenantID, outbox.AttrType, outbox.AttrTopic, outbox.AttrReplayOf}

// trimAttributes drops attributes beyond limit: the reason attributes
// (overwritten anyway) first, then foreign ones in name order.
func trimAttributes(attrs map[string]sqstypes.MessageAttributeValue, limit int) {
	for _, k := range reasonAttrs {
		delete(attrs, k)
	}
	if len(attrs) <= limit {
		return
	}
	var foreign []string
	for k := range attrs {
		if !slices.Contains(platformAttrs, k) {
			foreign = append(foreign, k)
		}
	}
	slices.Sort(foreign)
	for _, k := range foreign {
		if len(attrs) <= limit {
			return
		}
		delete(attrs, k)
	}
}

// orDash: SQS rejects empty attribute values.
func orDash(v string) string {
	if v == "" {
		return "-"
	}
	return v
}

// Requeue sends a copy of m (body and message attributes unchanged, its
// trace header kept) back to the topic queue, visible after delay (whole
// seconds, at most SQS's 15 minutes): a fresh message whose receive count
// starts again. A standard queue's copy keeps the message's group (its
// tenant: fair queues). A FIFO message is never re-queued: the copy would
// go to the back of its group.
func (s *Source) Requeue(ctx context.Context, m events.SQSMessage, delay time.Duration) error {
	if s.FIFO {
		return errors.New("sqs requeue: a FIFO message cannot be re-queued without breaking its group's order")
	}
	attrs := make(map[string]sqstypes.MessageAttributeValue, len(m.MessageAttributes))
	for k, v := range m.MessageAttributes {
		attrs[k] = sqstypes.MessageAttributeValue{DataType: aws.String(v.DataType), StringValue: v.StringValue, BinaryValue: v.BinaryValue}
	}
	group := m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)]
	if group == "" {
		group = TenantGroup(aws.ToString(m.MessageAttributes[outbox.AttrTenantID].StringValue))
	}
	in := &sqs.SendMessageInput{
		QueueUrl:          aws.String(s.URL),
		MessageBody:       aws.String(m.Body),
		MessageAttributes: attrs,
		MessageGroupId:    aws.String(group),
		DelaySeconds:      min(VisibilitySeconds(delay), 900),
	}
	if th := m.Attributes[string(sqstypes.MessageSystemAttributeNameAWSTraceHeader)]; th != "" {
		in.MessageSystemAttributes = map[string]sqstypes.MessageSystemAttributeValue{
			string(sqstypes.MessageSystemAttributeNameForSendsAWSTraceHeader): {DataType: aws.String("String"), StringValue: aws.String(th)},
		}
	}
	if _, err := s.Client.SendMessage(ctx, in); err != nil {
		return fmt.Errorf("sqs requeue %s: %w", m.MessageId, err)
	}
	return nil
}
