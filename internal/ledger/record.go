package ledger

import (
	"fmt"
	"time"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// StatusReceived is the ledger status written at commit. Per-topic progress
// (enqueued, completed, dlq) lives on the outbox rows, so the hot path pays
// one write per topic rather than two; views derive the event-level status
// from the rows (see Summarize).
const StatusReceived = "received"

// Record is the ledger item of one event.
type Record struct {
	// Key is the record's storage identity (see Key).
	Key string
	// Event is the canonical envelope: Payload inline, or PayloadRef when the
	// payload was claim-checked.
	Event       envelope.Event
	Topics      []string
	PayloadHash string
	// OrderingKey is the entity whose events a FIFO topic keeps in order
	// (subject.OrderingKey: what a provider's rules say, an internal
	// producer's subject), fixed at ingest while the payload is inline so resends of
	// a claim-checked event keep their group. Records stored before it
	// existed have none: their tenant's events are one sequence.
	OrderingKey string
	Status      string
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// Erased reports whether the record's subject was erased: its payload is
// ErasedPayload and no claim-checked payload is referenced.
func (r Record) Erased() bool {
	return r.Event.PayloadRef == nil && string(r.Event.Payload) == string(ErasedPayload)
}

// Message builds the queue message for one of the record's topics.
func (r Record) Message(topic string) (outbox.Message, error) {
	body, err := r.Event.Marshal()
	if err != nil {
		return outbox.Message{}, fmt.Errorf("ledger: encode %s: %w", r.Event.ID, err)
	}
	return outbox.Message{
		Topic:    topic,
		Key:      r.Key,
		EventID:  r.Event.ID,
		TenantID: r.Event.TenantID,
		Type:     r.Event.Type,
		Body:     body,
		// The group of a FIFO topic's message.
		OrderingKey: r.OrderingKey,
	}, nil
}

// Summarize derives an event-level status from its outbox rows: the least
// advanced row wins, so "completed" means every topic completed.
func Summarize(rows []outbox.Row) string {
	if len(rows) == 0 {
		return StatusReceived
	}
	rank := map[outbox.Status]int{
		outbox.StatusDLQAbandoned: 0, outbox.StatusDLQ: 0,
		outbox.StatusFailed: 1, outbox.StatusPending: 2,
		outbox.StatusEnqueued: 3, outbox.StatusProcessing: 4, outbox.StatusCompleted: 5,
	}
	least := rows[0].Status
	for _, r := range rows[1:] {
		if rank[r.Status] < rank[least] {
			least = r.Status
		}
	}
	switch least {
	case outbox.StatusDLQAbandoned, outbox.StatusDLQ:
		return "dlq"
	case outbox.StatusFailed:
		return "failed"
	case outbox.StatusPending:
		return StatusReceived
	case outbox.StatusEnqueued, outbox.StatusProcessing:
		return "enqueued"
	}
	return "completed"
}
