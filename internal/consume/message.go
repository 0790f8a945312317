package consume

import (
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/ledger"
)

// Message attribute names the runtime reads. They mirror outbox.Attr*,
// which internal/aws/sqsqueue writes (TestAttributeNamesMatchTheQueueAdapter
// keeps them in step); this package does not import the SQS adapter.
const (
	attrEventKey = "eventKey"
	attrEventID  = "eventId"
	attrTenantID = "tenantId"
	attrTopic    = "topic"
	attrReplayOf = "replayOf"
)

// SQS system attributes of a received message.
const (
	sysReceiveCount = "ApproximateReceiveCount"
	sysGroupID      = "MessageGroupId"
	sysSentAt       = "SentTimestamp"
)

// Message is one parsed topic message, as handlers see it.
type Message struct {
	// Event is the envelope, its payload inline: a claim-checked payload
	// has been fetched and verified already.
	Event envelope.Event
	// Key is the event's storage key (ledger.Key), from the eventKey
	// attribute; messages sent before keys existed carry none and use the
	// event id (ledger.LegacyKey).
	Key   string
	Topic string
	// MessageID is the SQS message id (the outbox row's lease owner).
	MessageID string
	// ReceiveCount is SQS's ApproximateReceiveCount (1 on first delivery).
	ReceiveCount int
	// Attempt is which attempt at the message this is (1 on the first),
	// what backoff and giving up count by: on a FIFO topic the consumer's
	// own count (Claim.Attempt), since a message held behind a failing one
	// of its group is received — and its receive count grows — without
	// being attempted; on a standard queue its receive count.
	Attempt int
	// ReplayOf is the incident id when an operator replayed the event.
	ReplayOf string
	// GroupID is the message group: the FIFO ordering group, or a standard
	// (fair) queue's tenant.
	GroupID string
	// SentAt is when the message was sent to the queue.
	SentAt time.Time
}

// failure is a message the runtime could not hand to the handler, or whose
// handler failed.
type failure struct {
	kind Kind
	code string
	// msg is what the outbox row and the incident record (stores an
	// erasure redacts); logged is what logs and traces get (Redacted):
	// the same unless the error quotes a subscriber's answer.
	msg, logged string
	// class names the failure in the attempt's record when the handler
	// noted none (a step of the runtime's own).
	class      string
	retryAfter time.Duration
	// benign marks a retry that is no failure of this message (another
	// delivery holds the row, or an earlier message of its FIFO group is
	// being retried): not counted as failed.
	benign bool
}

func poison(code, format string, args ...any) *failure {
	m := fmt.Sprintf(format, args...)
	return &failure{kind: KindPermanent, code: code, msg: m, logged: m}
}

func transient(format string, args ...any) *failure {
	m := fmt.Sprintf(format, args...)
	return &failure{kind: KindTransient, msg: m, logged: m}
}

// failureOf turns a handler error into a failure.
func failureOf(err error) *failure {
	kind, code, after := Classify(err)
	return &failure{kind: kind, code: code, msg: err.Error(), logged: Redacted(err), retryAfter: after}
}

// parse strictly parses the body and checks it against the message
// attributes. Everything it rejects is poison: no retry can fix a message.
func parse(rec events.SQSMessage, topic string) (Message, *failure) {
	ev, rerr := envelope.ParseMessage([]byte(rec.Body))
	if rerr != nil {
		return Message{}, poison(string(rerr.Code), "message body is not a valid platform envelope: %s", rerr.Error())
	}
	m := Message{
		Event:        ev,
		Key:          ev.ID,
		Topic:        topic,
		MessageID:    rec.MessageId,
		ReceiveCount: 1,
		ReplayOf:     attr(rec, attrReplayOf),
		GroupID:      rec.Attributes[sysGroupID],
	}
	if n, err := strconv.Atoi(rec.Attributes[sysReceiveCount]); err == nil && n > 0 {
		m.ReceiveCount = n
	}
	m.Attempt = m.ReceiveCount
	if ms, err := strconv.ParseInt(rec.Attributes[sysSentAt], 10, 64); err == nil && ms > 0 {
		m.SentAt = time.UnixMilli(ms).UTC()
	}
	// Missing attributes are tolerated (a message an operator moved back by
	// hand may have lost them); disagreeing ones are not.
	if v, ok := attrOK(rec, attrEventID); ok && v != ev.ID {
		return m, poison(CodeEventIDMismatch, "eventId attribute %q disagrees with envelope id %q", v, ev.ID)
	}
	if v, ok := attrOK(rec, attrTenantID); ok && v != ev.TenantID {
		return m, poison(CodeTenantMismatch, "tenantId attribute %q disagrees with envelope tenant %q", v, ev.TenantID)
	}
	if v, ok := attrOK(rec, attrEventKey); ok {
		// A key is the id, or the tenant-scoped id: anything else would
		// point the claim at another event's row.
		if !ledger.Names(v, ev.TenantID, ev.ID) {
			return m, poison(CodeEventIDMismatch, "eventKey attribute %q does not name event %q of tenant %q", v, ev.ID, ev.TenantID)
		}
		m.Key = v
	}
	if v, ok := attrOK(rec, attrTopic); ok && v != topic {
		return m, poison(CodeTopicMismatch, "message for topic %q arrived on the %q queue", v, topic)
	}
	return m, nil
}

func attr(rec events.SQSMessage, name string) string {
	v, _ := attrOK(rec, name)
	return v
}

func attrOK(rec events.SQSMessage, name string) (string, bool) {
	a, ok := rec.MessageAttributes[name]
	if !ok || a.StringValue == nil {
		return "", false
	}
	return *a.StringValue, true
}
