package envelope

// Status is the outcome of a publish.
type Status string

const (
	// StatusEnqueued: stored and sent to every routed topic.
	StatusEnqueued Status = "enqueued"
	// StatusDuplicate: the event id was already stored with the same
	// content; any dispatch that was still pending and free was re-driven.
	StatusDuplicate Status = "duplicate_acknowledged"
	// StatusAccepted: durably stored, but some topic dispatches are still
	// pending (the sweeper or a caller retry finishes them).
	StatusAccepted Status = "accepted"
	// StatusRejected: invalid or not allowed; nothing stored.
	StatusRejected Status = "rejected"
	// StatusUnrouted: valid and allowed, but no route matches the type;
	// nothing stored.
	StatusUnrouted Status = "unrouted"
)

// Result is what ingest returns to every producer.
type Result struct {
	Status        Status   `json:"status"`
	EventID       string   `json:"eventId,omitempty"`
	Topics        []string `json:"topics"`
	PendingTopics []string `json:"pendingTopics"`
	Error         *Error   `json:"error,omitempty"`
}

// Reject builds a rejected result.
func Reject(eventID string, err *Error) Result {
	return Result{Status: StatusRejected, EventID: eventID, Topics: []string{}, PendingTopics: []string{}, Error: err}
}
