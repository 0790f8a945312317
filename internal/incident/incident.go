package incident

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"time"
)

// Status of an incident.
type Status string

const (
	StatusOpen     Status = "open"
	StatusTriaged  Status = "triaged"
	StatusRetrying Status = "retrying"
	StatusResolved Status = "resolved"
	StatusIgnored  Status = "ignored"
)

// Statuses lists every status in lifecycle order.
var Statuses = []Status{StatusOpen, StatusTriaged, StatusRetrying, StatusResolved, StatusIgnored}

// Valid reports whether s is a known status.
func (s Status) Valid() bool { return slices.Contains(Statuses, s) }

// Actors recorded in history by the platform itself; operators are
// recorded by the name they give (the CLI defaults to the OS user).
const (
	ActorArchiver = "dlq-archiver"
	ActorSweeper  = "outbox-sweeper"
	ActorReplay   = "replay"
)

// Error codes of incidents the platform opens itself. Consumer-sent dead
// letters carry their own errorCode attribute.
const (
	// CodeOutboxExhausted: the sweeper gave up sending the dispatch.
	CodeOutboxExhausted = "outbox_exhausted"
	// CodeMaxReceives: SQS redrove the message after maxReceiveCount
	// receives; the error is the outbox row's lastError.
	CodeMaxReceives = "max_receives_exceeded"
	// CodeUnparseable: the dead letter's body is not a platform envelope.
	CodeUnparseable = "unparseable_body"
)

// MessageOutboxExhausted is the error message of a sweeper-abandoned
// dispatch (the sweeper abandons it: docs/operations.md).
const MessageOutboxExhausted = "Outbox sweeper retries exhausted"

// SourceOutbox is the SourceQueue of incidents the sweeper opens: the
// message never reached a queue.
const SourceOutbox = "outbox-sweeper"

// UnknownTenant is the tenant of a raw dead letter that names none. It
// cannot collide with a real tenant id (those never start with "_").
const UnknownTenant = "_unknown"

// Incident is one dead-lettered (event, topic) dispatch.
type Incident struct {
	ID      string `json:"incidentId"`
	EventID string `json:"eventId"`
	// EventKey is the event's storage key (ledger.Key): "<tenant>/<id>" for
	// internal producers, the id for provider events and for incidents
	// opened before keys were scoped by tenant (where it is empty in
	// storage; Key fills it in).
	EventKey string `json:"eventKey,omitempty"`
	TenantID string `json:"tenantId"`
	Topic    string `json:"topic"`
	// Type and Source of the event (empty for an unparseable body).
	Type   string `json:"type,omitempty"`
	Source string `json:"source,omitempty"`
	// Subject and Owner are the subject identifiers of the event
	// (subject.Names: the envelope subject, and the entity a provider's
	// payload names when that is another, such as a Stripe customer); an
	// erasure finds the incident by either.
	Subject string `json:"subject,omitempty"`
	Owner   string `json:"owner,omitempty"`
	// SourceQueue is the dead-letter queue the message was drained from
	// (its ARN), or SourceOutbox.
	SourceQueue  string `json:"sourceQueue"`
	ErrorCode    string `json:"errorCode"`
	ErrorMessage string `json:"errorMessage"`
	// ErrorSummary is ErrorMessage with a subscriber's answer it quotes
	// named by length and hash instead: what alerts carry. The consumer
	// sends it with its dead letters; others have none.
	ErrorSummary string `json:"errorSummary,omitempty"`
	// ErrorDetail is the longer error text when there is one (the outbox
	// row's lastError, a stack).
	ErrorDetail string `json:"errorDetail,omitempty"`
	// RetryCount is how many times the dispatch dead-lettered: 1 when
	// opened, +1 each time it comes back.
	RetryCount int `json:"retryCount"`
	// ReplayCount is how many replays were started.
	ReplayCount int `json:"replayCount"`
	// ReplayToken identifies the replay request that started the latest
	// replay, so a retried request (a Step Functions retry of replay-one)
	// never starts a second one.
	ReplayToken string `json:"replayToken,omitempty"`
	Body        Body   `json:"body"`
	// Raw marks a body that is not a platform envelope: kept verbatim,
	// never replayed.
	Raw        bool      `json:"raw,omitempty"`
	Status     Status    `json:"status"`
	ReplayedAt time.Time `json:"replayedAt,omitzero"`
	ResolvedAt time.Time `json:"resolvedAt,omitzero"`
	ResolvedBy string    `json:"resolvedBy,omitempty"`
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
	// LastFailedAt is when the latest dead letter failed.
	LastFailedAt time.Time `json:"lastFailedAt"`
	History      []Change  `json:"history,omitempty"`
	// MessageIDs are the SQS message ids of the latest dead letters
	// archived, so a redelivered dead letter is not counted twice.
	MessageIDs []string `json:"messageIds,omitempty"`
	// Version is the optimistic concurrency version: 0 for an incident not
	// stored yet, then 1, 2, … on each write.
	Version int `json:"version"`
}

// Change is one history entry.
type Change struct {
	// From is empty for the entry that opened the incident.
	From Status    `json:"from,omitempty"`
	To   Status    `json:"to"`
	By   string    `json:"by"`
	At   time.Time `json:"at"`
	Note string    `json:"note,omitempty"`
}

// Body is where an incident's message is kept: inline when it fits (at
// most the inline threshold, 64 KiB), else in the archive bucket under Key.
// The message is the canonical envelope with its payload inline (a
// claim-checked payload is copied in when archived, so the incident never
// depends on the claim-check object's lifecycle), or the raw body.
type Body struct {
	Inline []byte `json:"inline,omitempty"`
	Bucket string `json:"bucket,omitempty"`
	Key    string `json:"key,omitempty"`
	Size   int    `json:"size"`
	SHA256 string `json:"sha256"`
	// PayloadKey is the incident's copy of a claim-checked payload (in
	// Bucket), which the stored envelope's payloadRef points at.
	PayloadKey string `json:"payloadKey,omitempty"`
}

// External reports whether the body lives in S3.
func (b Body) External() bool { return b.Key != "" }

// ID is the deterministic incident id of an (event, topic) dispatch, from
// the event's storage key (ledger.Key), so a dispatch that dead-letters
// again updates the same incident. (A provider event's key, and the key of
// an event stored before keys were scoped by tenant, is its id: their
// incident ids are the ones they always had.)
func ID(eventKey, topic string) string {
	sum := sha256.Sum256([]byte(eventKey + "\x00" + topic))
	return "inc_" + hex.EncodeToString(sum[:])[:32]
}

// Key is the storage key of the incident's event.
func (inc Incident) Key() string {
	if inc.EventKey != "" {
		return inc.EventKey
	}
	return inc.EventID
}

// Stuck reports a replay that was started more than after ago and neither
// resolved nor came back as a dead letter: its message may never have
// been sent (the replay died midway) or is taking unusually long.
func (inc Incident) Stuck(now time.Time, after time.Duration) bool {
	return inc.Status == StatusRetrying && !inc.ReplayedAt.IsZero() && now.Sub(inc.ReplayedAt) > after
}

// DefaultStuckAfter is how long a replay may stay retrying before it is
// reported stuck and reopened. A replayed message that is merely slow
// (consumer backoff) still resolves its incident when it succeeds.
const DefaultStuckAfter = 15 * time.Minute

// ValidID reports whether s has the shape of an incident id.
func ValidID(s string) bool {
	if len(s) != 36 || s[:4] != "inc_" {
		return false
	}
	for _, c := range s[4:] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
