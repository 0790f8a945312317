package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/kit/pagecursor"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/outboxsweep"
)

// Shards is table.SweepShards: rows are written across that many sweeper
// index partitions per status.
func (e *Events) Shards() int { return table.SweepShards }

// DuePage returns up to p.Limit rows of one sweeper index partition
// (status, shard) due at p.Now, oldest first, continuing after p.Cursor (""
// = from the start). The returned cursor is "" once the partition is
// exhausted.
func (e *Events) DuePage(ctx context.Context, p outboxsweep.DueParams) (outboxsweep.DuePage, error) {
	var start map[string]ddbtypes.AttributeValue
	if p.Cursor != "" {
		var err error
		if start, err = decodeKey(p.Cursor); err != nil {
			return outboxsweep.DuePage{}, fmt.Errorf("dynamo: due %s#%d: invalid cursor: %w", p.Status, p.Shard, err)
		}
	}
	page, err := e.duePartition(ctx, p.Status, p.Shard, p.Now, int32(p.Limit), start)
	if err != nil {
		return outboxsweep.DuePage{}, err
	}
	out := outboxsweep.DuePage{Rows: page.Rows}
	if page.Next != nil {
		if out.Cursor, err = encodeKey(page.Next); err != nil {
			return outboxsweep.DuePage{}, err
		}
	}
	return out, nil
}

// Ledgers reads the ledger items of several events by key with
// BatchGetItem (strongly consistent, 100 keys a call, unprocessed keys
// retried). Events without a ledger item are absent from the result.
func (e *Events) Ledgers(ctx context.Context, eventKeys []string) (map[string]ledger.Record, error) {
	out := make(map[string]ledger.Record, len(eventKeys))
	seen := map[string]bool{}
	var keys []map[string]ddbtypes.AttributeValue
	for _, k := range eventKeys {
		if seen[k] {
			continue
		}
		seen[k] = true
		keys = append(keys, map[string]ddbtypes.AttributeValue{table.AttrPK: str(EventPK(k)), table.AttrSK: str(ledgerSK)})
	}
	err := e.batchGet(ctx, keys, func(item map[string]ddbtypes.AttributeValue) error {
		var it ledgerItem
		if err := attributevalue.UnmarshalMap(item, &it); err != nil {
			return fmt.Errorf("dynamo: decode ledger: %w", err)
		}
		rec := it.record()
		out[rec.Key] = rec
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dynamo: batch get ledgers: %w", err)
	}
	return out, nil
}

// MarkDLQ records that a dispatch's message was archived from its DLQ:
// status dlq (out of the due index), lease cleared. A completed row, a row a
// consumer holds under a live lease (a replay already running) and a
// missing row (expired, or never written) are left alone: marked is false.
func (e *Events) MarkDLQ(ctx context.Context, r outbox.RowRef, now time.Time) (marked bool, err error) {
	values := map[string]ddbtypes.AttributeValue{
		":dlq":        str(string(outbox.StatusDLQ)),
		":empty":      str(""),
		":zero":       num(0),
		":now":        str(FormatTime(now)),
		":nowms":      num(millis(now)),
		":completed":  str(string(outbox.StatusCompleted)),
		":processing": str(string(outbox.StatusProcessing)),
	}
	err = e.update(ctx, r,
		leaveDue("SET #s = :dlq, leaseOwner = :empty, leaseUntil = :zero, updatedAt = :now"),
		"attribute_exists(pk) AND #s <> :completed AND NOT (#s = :processing AND leaseUntil > :nowms)", values)
	if errors.Is(err, errCondition) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("dynamo: mark dlq %s: %w", r, err)
	}
	return true, nil
}

// ResetForReplay puts a dispatch row back to enqueued (its due index entry
// as it was: a completed row stays out, and the consumer's claim puts it
// back; lease cleared; attempts and lastError kept): before the
// send for a completed row, so the consumer's idempotency claim lets a
// forced replay through, after it for any other (so views show the replay
// in flight). It is conditional on the row still being as seen (status,
// lease owner and updatedAt), so it cannot clobber a consumer that took the
// row meanwhile (outbox.ErrRowChanged).
func (e *Events) ResetForReplay(ctx context.Context, seen outbox.Row, now time.Time) error {
	values := map[string]ddbtypes.AttributeValue{
		":enq":     str(string(outbox.StatusEnqueued)),
		":empty":   str(""),
		":zero":    num(0),
		":nowms":   num(millis(now)),
		":now":     str(FormatTime(now)),
		":seen":    str(string(storedStatus(seen))),
		":owner":   str(seen.LeaseOwner),
		":updated": str(FormatTime(seen.UpdatedAt)),
	}
	err := e.update(ctx, seen.Ref(),
		keepDue("SET #s = :enq, leaseOwner = :empty, leaseUntil = :zero, nextRetryAt = :nowms, updatedAt = :now"),
		"#s = :seen AND leaseOwner = :owner AND updatedAt = :updated", values)
	if errors.Is(err, errCondition) {
		return fmt.Errorf("dynamo: reset %s: %w", seen.Ref(), outbox.ErrRowChanged)
	}
	if err != nil {
		return fmt.Errorf("dynamo: reset %s: %w", seen.Ref(), err)
	}
	return nil
}

// Reschedule moves a due row the sweeper sends nothing for (see
// outboxsweep.Rows): out of the due index, or its nextRetryAt to r.At,
// conditional on status, lease owner and updatedAt as seen. updatedAt is
// left alone: the row itself did not change (unless it was read as
// enqueued from its receipt: then this write records that, at r.Now).
func (e *Events) Reschedule(ctx context.Context, r outboxsweep.Reschedule) (bool, error) {
	values := map[string]ddbtypes.AttributeValue{
		":seen":    str(string(storedStatus(r.Seen))),
		":owner":   str(r.Seen.LeaseOwner),
		":updated": str(FormatTime(r.Seen.UpdatedAt)),
	}
	// A row read as enqueued from its dispatch receipt is stored pending
	// under the dispatcher's lease: this write records it enqueued, as
	// the mark the receipt stood in for would have.
	set := ""
	if r.Seen.Receipted {
		values[":now"] = str(FormatTime(r.Now))
		set = recordSent(values) + ", updatedAt = :now"
	}
	var expr string
	if r.At.IsZero() {
		expr = "REMOVE duePk, sweepPk"
		if set != "" {
			expr = "SET " + set + " " + expr
		}
	} else {
		values[":at"] = num(millis(r.At))
		if set != "" {
			set += ", "
		}
		expr = enterDue("SET "+set+"nextRetryAt = :at", r.Seen.Ref(), values)
	}
	err := e.update(ctx, r.Seen.Ref(), expr, "#s = :seen AND leaseOwner = :owner AND updatedAt = :updated", values)
	if errors.Is(err, errCondition) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("dynamo: reschedule %s: %w", r.Seen.Ref(), err)
	}
	return true, nil
}

// Settle records the outcome of a processing row whose lease ended long
// ago (see outboxsweep.Settlement), conditional on the row being as seen.
//
// The attempt whose lease ended is recorded as lost (no outcome was
// written for it), in the same write.
func (e *Events) Settle(ctx context.Context, p outboxsweep.Settlement) (bool, error) {
	log := claimLog(p.Seen.DeliveryAttempts, true, p.Seen.UpdatedAt)
	lost := *log.Lost
	log.Lost, log.Next = nil, lost.N
	err := e.releaseProcessing(ctx, processingRelease{
		Row: p.Seen.Ref(), To: p.Status, Owner: p.Seen.LeaseOwner, SameLease: true, LeaseUntil: p.Seen.LeaseUntil,
		NextRetryAt: p.Now, LastError: p.Note, Now: p.Now, Attempt: lost, Log: log,
	})
	if errors.Is(err, errCondition) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("dynamo: settle %s: %w", p.Seen.Ref(), err)
	}
	return true, nil
}

// Recovery is the Events and Incidents tables together, for the writes
// that span both: the sweeper abandoning a dispatch, and every dead letter
// recorded into an incident (incident.Recorder), each guarded by the
// dispatch row's erasure marker in the same transaction.
type Recovery struct {
	Events *Events
	*Incidents
}

var _ incident.Recorder = (*Recovery)(nil)

// SaveDeadLetter writes inc as Save does (optimistic on its version) in one
// transaction with a check that its dispatch row (the incident's event and
// topic) carries no erasure marker: outbox.ErrErased when it does, and
// nothing is written. The check is the row's (Unerased), read for the
// condition: 2 write units on AWS, and the incident's put is transactional
// (twice its units), on the dead-letter path only. A transaction that
// conflicted with another write to either item is incident.ErrConflict:
// Upsert reads again and retries.
func (r *Recovery) SaveDeadLetter(ctx context.Context, inc incident.Incident) (incident.Incident, error) {
	put, err := r.Incidents.put(inc)
	if err != nil {
		return incident.Incident{}, err
	}
	_, err = r.Incidents.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		r.Events.Unerased(outbox.RowRef{Key: inc.Key(), Topic: inc.Topic}), {Put: put},
	}})
	switch class, at := classify(err); {
	case err == nil:
		inc.Version++
		return inc, nil
	case class == txConditionFailed && at == 0:
		return incident.Incident{}, fmt.Errorf("dynamo: save incident %s: %w", inc.ID, outbox.ErrErased)
	case class == txConditionFailed, class == txRetry:
		return incident.Incident{}, fmt.Errorf("dynamo: save incident %s: %w", inc.ID, incident.ErrConflict)
	default:
		return incident.Incident{}, fmt.Errorf("dynamo: save incident %s: %w", inc.ID, err)
	}
}

// Restore recreates what a replay needs of an event past its retention
// (incidents never expire; ledger items do): the ledger record, unless it
// still exists, and the dispatch row, in one transaction, both expiring at
// rec.ExpiresAt, so a row never exists without its ledger item and a
// later publish of the id is a duplicate again, not a new event. The row
// is written enqueued. A row already present is left alone (ErrRowChanged:
// read it again).
//
// The ledger record is restored from the incident's body, a copy of the
// event's data, so the transaction is guarded by the erasure (§5,
// guarantee 13): it checks that the incident it restores from is not
// erased (its body digest incident.ErasedSHA256) and that an existing
// ledger item carries no erasure marker; outbox.ErrErased and nothing is
// written otherwise. A restore that commits before the erasure redacted
// the incident is found by the erasure, which erases the incident's event
// after redacting it. The checks cost 2 write units each, on a replay of
// an expired event only.
func (r *Recovery) Restore(ctx context.Context, rec ledger.Record, row outbox.Row, ledgerExists bool, incidentID string) error {
	e := r.Events
	rowAV, err := attributevalue.MarshalMap(toRowItem(row, rec.ExpiresAt))
	if err != nil {
		return fmt.Errorf("dynamo: marshal row %s: %w", row.Ref(), err)
	}
	items := []ddbtypes.TransactWriteItem{{Put: &ddbtypes.Put{TableName: aws.String(e.Table), Item: rowAV, ConditionExpression: aws.String("attribute_not_exists(pk)")}}}
	if ledgerExists {
		items = append(items, ddbtypes.TransactWriteItem{ConditionCheck: &ddbtypes.ConditionCheck{
			TableName: aws.String(e.Table), ConditionExpression: aws.String("attribute_exists(pk) AND " + notErased),
			Key: map[string]ddbtypes.AttributeValue{table.AttrPK: str(EventPK(rec.Key)), table.AttrSK: str(ledgerSK)},
		}})
	} else {
		led, err := attributevalue.MarshalMap(toLedgerItem(rec))
		if err != nil {
			return fmt.Errorf("dynamo: marshal ledger %s: %w", rec.Key, err)
		}
		items = append(items, putNew(e.Table, led))
	}
	items = append(items, ddbtypes.TransactWriteItem{ConditionCheck: &ddbtypes.ConditionCheck{
		TableName:                 aws.String(r.Incidents.Table),
		Key:                       map[string]ddbtypes.AttributeValue{table.AttrIncidentID: str(incidentID)},
		ConditionExpression:       aws.String("attribute_exists(incidentId) AND bodySha256 <> :erased"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":erased": str(incident.ErasedSHA256)},
	}})
	_, err = e.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	switch class, at := classify(err); {
	case err == nil:
		return nil
	case class == txConditionFailed && at == 2:
		return fmt.Errorf("dynamo: restore %s: incident %s is erased or gone: %w", row.Ref(), incidentID, outbox.ErrErased)
	case class == txConditionFailed && at == 1 && ledgerExists:
		if erased, rerr := e.ledgerErased(ctx, rec.Key); rerr == nil && erased {
			return fmt.Errorf("dynamo: restore %s: %w", row.Ref(), outbox.ErrErased)
		}
		return fmt.Errorf("dynamo: restore %s: %w", row.Ref(), outbox.ErrRowChanged)
	case class == txConditionFailed:
		return fmt.Errorf("dynamo: restore %s: %w", row.Ref(), outbox.ErrRowChanged)
	default:
		return fmt.Errorf("dynamo: restore %s: %w", row.Ref(), err)
	}
}

// Abandon records a dispatch's final failed send (f, by its lease owner) as
// dlq_abandoned and opens (or reopens) its incident in ONE
// TransactWriteItems, so a row is never abandoned without its incident nor
// an incident opened for a row still being retried. The row's condition
// includes the erasure marker's absence (free: the row is written anyway),
// so an event erased while its last send was in flight opens no incident
// with its payload (outbox.ErrErased). It returns outbox.ErrLeaseLost when
// the row moved on meanwhile; a concurrent incident write is retried.
func (r *Recovery) Abandon(ctx context.Context, f outbox.Failure, dl incident.DeadLetter) (incident.Incident, error) {
	id := dl.IncidentID()
	values := map[string]ddbtypes.AttributeValue{
		":ab":      str(string(outbox.StatusDLQAbandoned)),
		":a":       num(int64(f.Attempts)),
		":e":       str(f.Err),
		":nowms":   num(millis(f.Now)),
		":empty":   str(""),
		":zero":    num(0),
		":now":     str(FormatTime(f.Now)),
		":o":       str(f.Owner),
		":pending": str(string(outbox.StatusPending)),
		":failed":  str(string(outbox.StatusFailed)),
	}
	rowUpdate := &ddbtypes.Update{
		TableName: aws.String(r.Events.Table),
		Key:       rowKey(f.Row),
		UpdateExpression: aws.String(leaveDue("SET #s = :ab, attempts = :a, lastError = :e, nextRetryAt = :nowms, " +
			"leaseOwner = :empty, leaseUntil = :zero, updatedAt = :now")),
		ConditionExpression:       aws.String("leaseOwner = :o AND (#s = :pending OR #s = :failed) AND " + notErased),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: values,
	}
	for attempt := 1; ; attempt++ {
		var existing *incident.Incident
		cur, err := r.Incidents.Get(ctx, id)
		switch {
		case err == nil:
			existing = &cur
		case !errors.Is(err, incident.ErrNotFound):
			return incident.Incident{}, err
		}
		inc, _ := incident.Record(existing, dl, f.Now)
		put, err := r.Incidents.put(inc)
		if err != nil {
			return incident.Incident{}, err
		}
		_, err = r.Events.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			TransactItems: []ddbtypes.TransactWriteItem{{Update: rowUpdate}, {Put: put}},
		})
		if err == nil {
			inc.Version++
			return inc, nil
		}
		retry := false
		var tce *ddbtypes.TransactionCanceledException
		if errors.As(err, &tce) {
			for i, reason := range tce.CancellationReasons {
				switch code := aws.ToString(reason.Code); {
				case code == "ConditionalCheckFailed" && i == 0:
					erased, rerr := r.Events.erased(ctx, f.Row)
					switch {
					case rerr != nil:
						return incident.Incident{}, rerr
					case erased:
						return incident.Incident{}, fmt.Errorf("dynamo: abandon %s: %w", f.Row, outbox.ErrErased)
					}
					return incident.Incident{}, outbox.ErrLeaseLost
				case code == "ConditionalCheckFailed" && i == 1:
					retry = true // the incident changed since we read it
				case code == "TransactionConflict", code == "ThrottlingError", code == "ProvisionedThroughputExceeded", code == "RequestLimitExceeded":
					retry = true
				}
			}
		} else if retryable(err) {
			retry = true
		}
		if !retry || attempt >= 8 {
			return incident.Incident{}, fmt.Errorf("dynamo: abandon %s: %w", f.Row, err)
		}
		if err := clock.Sleep(ctx, r.Events.backoff(attempt)); err != nil {
			return incident.Incident{}, err
		}
	}
}

// keyToken is an encodable copy of a DynamoDB key (string and number
// attributes only, which is all our keys use).
type keyToken map[string][2]string

func encodeKey(k map[string]ddbtypes.AttributeValue) (string, error) {
	t := keyToken{}
	for name, v := range k {
		switch v := v.(type) {
		case *ddbtypes.AttributeValueMemberS:
			t[name] = [2]string{"S", v.Value}
		case *ddbtypes.AttributeValueMemberN:
			t[name] = [2]string{"N", v.Value}
		default:
			return "", fmt.Errorf("dynamo: key attribute %s has unsupported type %T", name, v)
		}
	}
	return pagecursor.Encode(t)
}

func decodeKey(s string) (map[string]ddbtypes.AttributeValue, error) {
	var t keyToken
	if err := pagecursor.Decode(s, &t); err != nil {
		return nil, err
	}
	out := make(map[string]ddbtypes.AttributeValue, len(t))
	for name, v := range t {
		switch v[0] {
		case "S":
			out[name] = &ddbtypes.AttributeValueMemberS{Value: v[1]}
		case "N":
			out[name] = &ddbtypes.AttributeValueMemberN{Value: v[1]}
		default:
			return nil, fmt.Errorf("attribute %s: unsupported type %q", name, v[0])
		}
	}
	return out, nil
}

// ClaimDue takes the lease on a row the sweeper found due: like Claim, and
// also conditional on the row still being due (nextRetryAt <= now) with the
// attempt count the sweeper read. On AWS the sweeper index is eventually
// consistent: a stale entry for a row another sweeper just failed (lease
// released, retry pushed out) must not be claimed and sent again. An
// erased row is never claimed (Claim).
func (e *Events) ClaimDue(ctx context.Context, c outboxsweep.DueClaim) (bool, error) {
	until := millis(c.Now.Add(c.Lease))
	values := map[string]ddbtypes.AttributeValue{
		":o":       str(c.Owner),
		":lu":      num(until),
		":now":     str(FormatTime(c.Now)),
		":nowms":   num(millis(c.Now)),
		":a":       num(int64(c.Seen.Attempts)),
		":pending": str(string(outbox.StatusPending)),
		":failed":  str(string(outbox.StatusFailed)),
	}
	// A row found in the legacy index moves to the due index here.
	err := e.update(ctx, c.Seen.Ref(),
		enterDue("SET leaseOwner = :o, leaseUntil = :lu, nextRetryAt = :lu, updatedAt = :now", c.Seen.Ref(), values),
		"(#s = :pending OR #s = :failed) AND attribute_not_exists(erasedAt) AND leaseUntil < :nowms AND nextRetryAt <= :nowms AND attempts = :a", values)
	if errors.Is(err, errCondition) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("dynamo: claim due %s: %w", c.Seen.Ref(), err)
	}
	return true, nil
}

// Row reads one dispatch row with a strongly consistent read; false when
// it does not exist.
func (e *Events) Row(ctx context.Context, r outbox.RowRef) (outbox.Row, bool, error) {
	out, err := e.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(e.Table), Key: rowKey(r), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return outbox.Row{}, false, fmt.Errorf("dynamo: get row %s: %w", r, err)
	}
	if len(out.Item) == 0 {
		return outbox.Row{}, false, nil
	}
	var it rowItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return outbox.Row{}, false, fmt.Errorf("dynamo: decode row %s: %w", r, err)
	}
	rows := []outbox.Row{it.row()}
	if err := e.readReceipts(ctx, rows); err != nil {
		return outbox.Row{}, false, err
	}
	return rows[0], true, nil
}
