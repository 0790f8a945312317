package dynamo

import (
	"strings"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

const (
	eventPrefix    = "EVENT#"
	ledgerSK       = "LEDGER"
	dispatchPrefix = "DISPATCH#"
)

// EventPK is the partition key of an event's item collection, from the
// event's storage key (ledger.Key).
func EventPK(key string) string { return eventPrefix + key }

// keyOf is the storage key of an item collection's partition key.
func keyOf(pk string) string { return strings.TrimPrefix(pk, eventPrefix) }

// DispatchSK is the sort key of an event's outbox row for a topic.
func DispatchSK(topic string) string { return dispatchPrefix + topic }

// LedgerSK is the sort key of the ledger item.
const LedgerSK = ledgerSK

// ledgerItem is the DynamoDB shape of a ledger.Record. A ledger item is
// written twice (in the commit transaction) and billed per started KB, so
// attributes derivable from others are left out of new items and derived
// on read: eventId (from the key), createdAt (the tenantAt prefix) and a
// status of received (the only status ingest writes; views derive an
// event's status from its rows). Items written before carry them. A new
// item is in the tenant-shard index (tenantPk, tenantAt); one written
// before it carries tenantSk (the same value as tenantAt) and is in the
// legacy tenant index only, so no item is written to both.
type ledgerItem struct {
	PK          string               `dynamodbav:"pk"`
	SK          string               `dynamodbav:"sk"`
	EventID     string               `dynamodbav:"eventId,omitempty"`
	TenantID    string               `dynamodbav:"tenantId"`
	TenantPK    string               `dynamodbav:"tenantPk,omitempty"`
	TenantAt    string               `dynamodbav:"tenantAt,omitempty"`
	TenantSK    string               `dynamodbav:"tenantSk,omitempty"`
	Type        string               `dynamodbav:"type"`
	Source      string               `dynamodbav:"source"`
	Timestamp   string               `dynamodbav:"timestamp"`
	Subject     string               `dynamodbav:"subject,omitempty"`
	Traceparent string               `dynamodbav:"traceparent,omitempty"`
	Payload     string               `dynamodbav:"payload,omitempty"`
	PayloadZ    []byte               `dynamodbav:"payloadZ,omitempty"`
	PayloadGz   []byte               `dynamodbav:"payloadGz,omitempty"`
	PayloadRef  *envelope.PayloadRef `dynamodbav:"payloadRef,omitempty"`
	Topics      []string             `dynamodbav:"topics"`
	PayloadHash string               `dynamodbav:"payloadHash"`
	OrderingKey string               `dynamodbav:"orderingKey,omitempty"`
	Status      string               `dynamodbav:"status,omitempty"`
	CreatedAt   string               `dynamodbav:"createdAt,omitempty"`
	ExpiresAt   int64                `dynamodbav:"expiresAt"`
}

// rowItem is the DynamoDB shape of an outbox.Row.
type rowItem struct {
	PK       string `dynamodbav:"pk"`
	SK       string `dynamodbav:"sk"`
	EventID  string `dynamodbav:"eventId"`
	Topic    string `dynamodbav:"topic"`
	TenantID string `dynamodbav:"tenantId"`
	Type     string `dynamodbav:"type"`
	Status   string `dynamodbav:"status"`
	// DuePK puts the row in the sweeper's due index (enterDue).
	DuePK       string `dynamodbav:"duePk,omitempty"`
	Attempts    int    `dynamodbav:"attempts"`
	MaxAttempts int    `dynamodbav:"maxAttempts"`
	NextRetryAt int64  `dynamodbav:"nextRetryAt"`
	LeaseUntil  int64  `dynamodbav:"leaseUntil"`
	LeaseOwner  string `dynamodbav:"leaseOwner"`
	LastError   string `dynamodbav:"lastError"`
	CreatedAt   string `dynamodbav:"createdAt"`
	UpdatedAt   string `dynamodbav:"updatedAt"`
	ExpiresAt   int64  `dynamodbav:"expiresAt"`
	// AttemptOf is the message (SQS message id) a consumer last claimed
	// the row for, Attempt how many times it did (BeginProcessing).
	AttemptOf string `dynamodbav:"attemptOf,omitempty"`
	Attempt   int    `dynamodbav:"attempt,omitempty"`
	// ErasedAt marks the row of an erased event (outbox.Row.ErasedAt).
	ErasedAt string `dynamodbav:"erasedAt,omitempty"`
	// Tries are the delivery attempts (attempts.go).
	Tries []string `dynamodbav:"tries,omitempty"`
}

// Timestamps are stored as fixed-width UTC RFC 3339 with milliseconds so they
// sort lexically; lease and retry instants as epoch milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z"

// FormatTime renders t in the stored layout.
func FormatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

func toLedgerItem(r ledger.Record) ledgerItem {
	ev := r.Event
	created := FormatTime(r.CreatedAt)
	plain, z := packPayload(ev.Source, ev.Payload)
	it := ledgerItem{
		PK: EventPK(r.Key), SK: ledgerSK,
		EventID: ev.ID, TenantID: ev.TenantID,
		TenantPK: table.TenantPartition(ev.TenantID, r.Key), TenantAt: tenantAt(created, ev.ID),
		Type: ev.Type, Source: ev.Source, Timestamp: ev.Timestamp.Format(time.RFC3339Nano),
		Subject: ev.Subject, Traceparent: ev.Traceparent,
		Payload: plain, PayloadZ: z, PayloadRef: ev.PayloadRef,
		Topics: r.Topics, PayloadHash: r.PayloadHash, OrderingKey: r.OrderingKey, Status: r.Status,
		ExpiresAt: r.ExpiresAt.Unix(),
	}
	if it.EventID == eventIDOf(r.Key) {
		it.EventID = ""
	}
	if it.Status == ledger.StatusReceived {
		it.Status = ""
	}
	return it
}

// tenantAt is a ledger item's tenant-shard index sort key: the acceptance
// time in the stored layout, "#", the event id ("#" sorts before every id
// character, so the time alone bounds a window).
func tenantAt(created, eventID string) string { return created + "#" + eventID }

// sortValue is the item's position in a tenant listing: tenantAt, or
// tenantSk on an item written before the tenant-shard index.
func (it ledgerItem) sortValue() string {
	if it.TenantAt != "" {
		return it.TenantAt
	}
	return it.TenantSK
}

// eventIDOf is the event id in a storage key (ledger.Key): the key itself,
// or what follows the tenant.
func eventIDOf(key string) string {
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		return key[i+1:]
	}
	return key
}

func (it ledgerItem) record() ledger.Record {
	if it.EventID == "" {
		it.EventID = eventIDOf(keyOf(it.PK))
	}
	if it.CreatedAt == "" {
		it.CreatedAt, _, _ = strings.Cut(it.sortValue(), "#")
	}
	if it.Status == "" {
		it.Status = ledger.StatusReceived
	}
	ev := envelope.Event{
		SchemaVersion: envelope.SchemaVersion,
		ID:            it.EventID, TenantID: it.TenantID, Type: it.Type, Source: it.Source,
		Timestamp: parseTime(it.Timestamp), Subject: it.Subject, Traceparent: it.Traceparent,
		PayloadRef: it.PayloadRef,
	}
	// A payload that cannot be inflated is left out: the event then fails
	// validation where it is used and becomes an incident, never a
	// delivery of something else.
	ev.Payload, _ = unpackPayload(it.Payload, it.PayloadZ, it.PayloadGz)
	return ledger.Record{
		Key:   keyOf(it.PK),
		Event: ev, Topics: it.Topics, PayloadHash: it.PayloadHash, OrderingKey: it.OrderingKey, Status: it.Status,
		CreatedAt: parseTime(it.CreatedAt), ExpiresAt: time.Unix(it.ExpiresAt, 0).UTC(),
	}
}

// The sweeper's due index (table.IndexDue) holds a row from its creation
// in a status the sweeper acts on (outbox.Swept) until its outcome
// (outbox.Settled): its keys are duePk and nextRetryAt, and it projects
// only keys, so a transition that keeps both (ingest's enqueued mark, the
// consumer's claim, a consumer's retry) writes nothing to it. The sweeper
// reads each due row and decides by its status; an enqueued row it finds
// leaves the index (its message is on its queue), and the consumer's claim
// puts it back. Every expression also removes sweepPk: a row written
// before the due index leaves the legacy index on its next transition.

// enterDue is an update expression (set: a SET clause) that puts the row
// in the due index (or keeps it there) and out of the legacy index.
func enterDue(set string, r outbox.RowRef, values map[string]ddbtypes.AttributeValue) string {
	values[":dp"] = str(table.DuePartition(r.Key, r.Topic))
	return set + ", duePk = :dp REMOVE sweepPk"
}

// keepDue is an update expression that leaves the row's due index entry
// as it is (in or out) and takes it out of the legacy index.
func keepDue(set string) string { return set + " REMOVE sweepPk" }

// leaveDue is an update expression that takes the row out of both indexes:
// an outcome, or an enqueued row the sweeper has nothing to do for.
func leaveDue(set string) string { return set + " REMOVE duePk, sweepPk" }

// duePartition is the due index partition of a row created in status, ""
// for one created out of the index.
func duePartition(status outbox.Status, r outbox.RowRef) string {
	if !status.Swept() {
		return ""
	}
	return table.DuePartition(r.Key, r.Topic)
}

func toRowItem(r outbox.Row, expiresAt time.Time) rowItem {
	return rowItem{
		PK: EventPK(r.Key), SK: DispatchSK(r.Topic),
		EventID: r.EventID, Topic: r.Topic, TenantID: r.TenantID, Type: r.Type,
		Status: string(r.Status), DuePK: duePartition(r.Status, r.Ref()),
		Attempts: r.Attempts, MaxAttempts: r.MaxAttempts,
		NextRetryAt: millis(r.NextRetryAt), LeaseUntil: millis(r.LeaseUntil), LeaseOwner: r.LeaseOwner,
		LastError: r.LastError, CreatedAt: FormatTime(r.CreatedAt), UpdatedAt: FormatTime(r.UpdatedAt),
		ExpiresAt: expiresAt.Unix(),
	}
}

func (it rowItem) row() outbox.Row {
	return outbox.Row{
		Key:     keyOf(it.PK),
		EventID: it.EventID, Topic: it.Topic, TenantID: it.TenantID, Type: it.Type,
		Status: outbox.Status(it.Status), Attempts: it.Attempts, MaxAttempts: it.MaxAttempts,
		NextRetryAt: fromMillis(it.NextRetryAt), LeaseUntil: fromMillis(it.LeaseUntil), LeaseOwner: it.LeaseOwner,
		LastError: it.LastError, CreatedAt: parseTime(it.CreatedAt), UpdatedAt: parseTime(it.UpdatedAt),
		ErasedAt:         parseTime(it.ErasedAt),
		DeliveryAttempts: decodeAttempts(it.Tries),
	}
}
