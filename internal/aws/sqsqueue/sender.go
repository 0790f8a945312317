package sqsqueue

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/kit/canonjson"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// Sender sends to per-topic queues.
type Sender struct {
	Client *sqs.Client
	// URLs maps topic name to queue URL.
	URLs map[string]string
	// FIFO lists the topics whose queues are FIFO.
	FIFO map[string]bool
}

var _ outbox.Sender = (*Sender)(nil)

// Send puts m on its topic queue.
func (s *Sender) Send(ctx context.Context, m outbox.Message) error {
	url, ok := s.URLs[m.Topic]
	if !ok {
		return fmt.Errorf("sqsqueue: no queue configured for topic %q", m.Topic)
	}
	e := s.entry(m, "0")
	in := &sqs.SendMessageInput{
		QueueUrl: aws.String(url), MessageBody: e.MessageBody, MessageAttributes: e.MessageAttributes,
		MessageSystemAttributes: e.MessageSystemAttributes, MessageGroupId: e.MessageGroupId, MessageDeduplicationId: e.MessageDeduplicationId,
	}
	if _, err := s.Client.SendMessage(ctx, in); err != nil {
		return fmt.Errorf("sqs send %s: %w", m.Topic, err)
	}
	return nil
}

// entry is m as SQS takes it (a batch entry; Send copies its fields).
func (s *Sender) entry(m outbox.Message, id string) sqstypes.SendMessageBatchRequestEntry {
	e := sqstypes.SendMessageBatchRequestEntry{
		Id:                aws.String(id),
		MessageBody:       aws.String(string(Body(m.Body))),
		MessageAttributes: Attributes(m),
	}
	if m.TraceHeader != "" {
		e.MessageSystemAttributes = map[string]sqstypes.MessageSystemAttributeValue{
			string(sqstypes.MessageSystemAttributeNameForSendsAWSTraceHeader): {DataType: aws.String("String"), StringValue: aws.String(m.TraceHeader)},
		}
	}
	if !s.FIFO[m.Topic] {
		// A standard queue with message groups is an SQS fair queue: the
		// tenant is the group, so one tenant's backlog does not raise the
		// others' dwell time (docs/consumers.md, "Fair queues").
		e.MessageGroupId = aws.String(TenantGroup(m.TenantID))
		return e
	}
	e.MessageGroupId = aws.String(OrderingGroup(m.TenantID, m.OrderingKey))
	// The event's key dedupes provider retries and re-drives inside
	// SQS's 5-minute window; a replay must get through, so it carries
	// its own id. The key, not the id: an internal producer's id is
	// unique within its tenant only (the key is <tenant>/<id>), and a
	// queue whose deduplication scope is the queue (SQS's default, and
	// the local SQS's only one) would drop one tenant's event as a copy
	// of another's. Explicit ids rather than content-based
	// deduplication: a replay's body is the original's.
	dedup := m.DedupID
	if dedup == "" {
		dedup = m.Key
	}
	if dedup == "" {
		dedup = m.EventID
	}
	e.MessageDeduplicationId = aws.String(dedupID(dedup))
	return e
}

// Body is an envelope as SQS carries it: characters SQS (or the local
// emulator) refuses are \u-escaped inside its strings, which every JSON
// reader decodes back to the same value, so consumers need no decoding
// step of their own. Bodies without such characters go out byte for byte.
func Body(body []byte) []byte {
	return canonjson.EscapeRunes(body, func(r rune) bool { return !canonjson.SQSSafe(r) })
}

// GroupID is a FIFO message group id for an ordering key (the subject, or
// the tenant): SQS takes 1..128 characters of [!-~], so any other key is
// hashed (deterministically, so one subject stays one group).
func GroupID(key string) string {
	if len(key) > 0 && len(key) <= 128 && strings.IndexFunc(key, func(r rune) bool { return r < '!' || r > '~' }) < 0 {
		return key
	}
	return "sha256:" + envelope.SHA256Hex([]byte(key))
}

// OrderingGroup is a FIFO topic's message group for an event of tenant
// with ordering key key: the tenant's sequence of that entity
// ("acme/cus_123"), or the tenant's whole sequence when the event has no
// key. Scoped by tenant, so two tenants' entities of one name never block
// each other.
func OrderingGroup(tenant, key string) string {
	if key == "" {
		return TenantGroup(tenant)
	}
	return GroupID(tenant + "/" + key)
}

// TenantGroup is the message group of a standard-queue message: its
// tenant (a fair queue's tenant), or "platform" for a message that names
// none.
func TenantGroup(tenant string) string {
	if tenant == "" {
		return platformGroup
	}
	return GroupID(tenant)
}

// platformGroup groups the messages that belong to no tenant.
const platformGroup = "platform"

// Attributes are the message attributes of an outbox message.
func Attributes(m outbox.Message) map[string]sqstypes.MessageAttributeValue {
	key := m.Key
	if key == "" {
		key = m.EventID
	}
	attrs := map[string]sqstypes.MessageAttributeValue{
		outbox.AttrEventKey: str(key),
		outbox.AttrEventID:  str(m.EventID),
		outbox.AttrTenantID: str(m.TenantID),
		outbox.AttrType:     str(m.Type),
		outbox.AttrTopic:    str(m.Topic),
	}
	if m.ReplayOf != "" {
		attrs[outbox.AttrReplayOf] = str(m.ReplayOf)
	}
	return attrs
}

func str(v string) sqstypes.MessageAttributeValue {
	return sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
}

// dedupID fits SQS's 128-character deduplication id limit; event ids can be
// 255 characters, so long ones are hashed.
func dedupID(s string) string {
	if len(s) <= 128 {
		return s
	}
	return "sha256:" + envelope.SHA256Hex([]byte(s))
}
