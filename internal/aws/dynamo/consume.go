package dynamo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/kit/truncate"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// The consumer side of the outbox rows: processing → completed, or back to
// enqueued with lastError. Every write is conditional. The claim keeps the
// row's due index entry (or puts it back), the outcome takes it out:
// on the happy path the consumer's only index write is the completion's.

var _ consume.Rows = (*Events)(nil)

// claimAttempts bounds BeginProcessing's re-tries when the row changes
// between its conditional write and the read that explains a refusal.
const claimAttempts = 3

// BeginProcessing claims the outbox row for a consumer (status processing,
// lease to the owner until p.Until). The row stays in the sweeper's due
// index as it is, so the claim writes nothing to it: ingest put it there
// with nextRetryAt at the dispatch lease's end, and if the consumer has not
// recorded an outcome by then the sweeper reads the row and waits for the
// lease to end (a lost outcome is settled SettleAfter later). A row the
// sweeper took out of the index (enqueued, a message waiting on its queue)
// is put back. It is allowed from any status
// except completed and a processing row under a live lease. A missing row
// is created only together with a check that the event's ledger item
// exists, with the ledger item's expiry, so a row never outlives it (a
// replay of an event past its retention restores both first).
//
// A refused claim costs one strongly consistent GetItem to tell completed
// from busy (or erased: a row of an erased event is never claimed); the
// success path is a single UpdateItem.
//
// The claim also counts the attempts of the message (attemptOf = the
// owner, attempt = its count): the same write adds one, and returns the
// values it replaced; when they were another message's (a replay or a
// resend after an earlier delivery), a second write starts the count of
// this one at 1. So a claim's Attempt is how many times this message was
// handed to a consumer, whatever SQS's receive count says.
func (e *Events) BeginProcessing(ctx context.Context, p consume.Processing) (consume.Claim, error) {
	for range claimAttempts {
		attempt, log, err := e.beginProcessing(ctx, p)
		if err == nil {
			return consume.Claim{State: consume.Claimed, Attempt: attempt, Log: log}, nil
		}
		if !errors.Is(err, errCondition) {
			return consume.Claim{}, fmt.Errorf("dynamo: begin processing %s: %w", p.Row, err)
		}
		row, found, err := e.Row(ctx, p.Row)
		if err != nil {
			return consume.Claim{}, fmt.Errorf("dynamo: begin processing %s: %w", p.Row, err)
		}
		switch {
		case !found:
			state, log, err := e.createProcessing(ctx, p)
			if errors.Is(err, errCondition) {
				continue // created meanwhile by another delivery
			}
			if err != nil {
				return consume.Claim{}, fmt.Errorf("dynamo: begin processing %s: %w", p.Row, err)
			}
			return consume.Claim{State: state, Attempt: 1, Log: log}, nil
		case !row.ErasedAt.IsZero():
			return consume.Claim{State: consume.Erased}, nil
		case row.Status == outbox.StatusCompleted:
			return consume.Claim{State: consume.AlreadyCompleted}, nil
		case row.Status == outbox.StatusProcessing && row.LeaseUntil.After(p.Now):
			return consume.Claim{State: consume.Busy, LeaseUntil: row.LeaseUntil}, nil
		}
		// The row moved on between the write and the read: try again.
	}
	return consume.Claim{}, fmt.Errorf("dynamo: begin processing %s: the row kept changing", p.Row)
}

func (e *Events) beginProcessing(ctx context.Context, p consume.Processing) (int, outbox.AttemptLog, error) {
	until := millis(p.Until)
	out, err := e.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(e.Table),
		Key:              rowKey(p.Row),
		UpdateExpression: aws.String(keepDue("SET #s = :processing, duePk = if_not_exists(duePk, :dp), leaseOwner = :o, leaseUntil = :lu, updatedAt = :now, attemptOf = :o, attempt = if_not_exists(attempt, :zero) + :one")),
		// processing is a status the sweeper acts on (outbox.Swept): it
		// settles a lease that ended without an outcome. duePk is set only
		// when missing, so a row in the index keeps its keys.
		// A row carrying the erasure marker is never claimed: the refusal
		// (read below) tells the consumer, so the happy path pays nothing
		// for it.
		ConditionExpression:      aws.String("attribute_exists(pk) AND attribute_not_exists(erasedAt) AND #s <> :completed AND (#s <> :processing OR leaseUntil <= :nowms)"),
		ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":processing": str(string(outbox.StatusProcessing)),
			":completed":  str(string(outbox.StatusCompleted)),
			":dp":         str(table.DuePartition(p.Row.Key, p.Row.Topic)),
			":o":          str(p.Owner),
			":lu":         num(until),
			":now":        str(FormatTime(p.Now)),
			":nowms":      num(millis(p.Now)),
			":zero":       num(0),
			":one":        num(1),
		},
		// The row as it was (to read its attempt count); returned values
		// cost no read capacity.
		ReturnValues: ddbtypes.ReturnValueAllOld,
	})
	var ccf *ddbtypes.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return 0, outbox.AttemptLog{}, errCondition
	}
	if err != nil {
		return 0, outbox.AttemptLog{}, err
	}
	var old struct {
		AttemptOf string   `dynamodbav:"attemptOf"`
		Attempt   int      `dynamodbav:"attempt"`
		Status    string   `dynamodbav:"status"`
		UpdatedAt string   `dynamodbav:"updatedAt"`
		Tries     []string `dynamodbav:"tries"`
	}
	_ = attributevalue.UnmarshalMap(out.Attributes, &old)
	log := claimLog(decodeAttempts(old.Tries), old.Status == string(outbox.StatusProcessing), parseTime(old.UpdatedAt))
	log.Room = completionRoom(claimedItem(out.Attributes, p, old.Attempt+1), p.Now)
	switch {
	case old.AttemptOf == p.Owner || (old.AttemptOf == "" && old.Attempt == 0):
		return old.Attempt + 1, log, nil
	}
	// The count was another message's: this is this one's first attempt.
	// Only the lease owner writes it (a refusal means the row was taken
	// over meanwhile, which the owner's next write finds out).
	_, err = e.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(e.Table), Key: rowKey(p.Row),
		UpdateExpression:          aws.String("SET attempt = :one"),
		ConditionExpression:       aws.String("leaseOwner = :o AND attemptOf = :o"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":one": num(1), ":o": str(p.Owner)},
	})
	if err != nil && !errors.As(err, new(*ddbtypes.ConditionalCheckFailedException)) {
		return 0, outbox.AttemptLog{}, err
	}
	return 1, log, nil
}

// createProcessing creates a missing row in processing, in one transaction
// with a check that the ledger item still exists, expiring with it. It
// returns LedgerMissing when the ledger item is gone, errCondition when the
// row appeared meanwhile.
func (e *Events) createProcessing(ctx context.Context, p consume.Processing) (consume.ClaimState, outbox.AttemptLog, error) {
	ledgerKey := map[string]ddbtypes.AttributeValue{table.AttrPK: str(EventPK(p.Row.Key)), table.AttrSK: str(ledgerSK)}
	got, err := e.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(e.Table), Key: ledgerKey, ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("expiresAt, erasedAt"),
	})
	if err != nil {
		return 0, outbox.AttemptLog{}, err
	}
	if len(got.Item) == 0 {
		return consume.LedgerMissing, outbox.AttemptLog{}, nil
	}
	if _, erased := got.Item["erasedAt"]; erased {
		return consume.Erased, outbox.AttemptLog{}, nil
	}
	var led struct {
		ExpiresAt int64 `dynamodbav:"expiresAt"`
	}
	if err := attributevalue.UnmarshalMap(got.Item, &led); err != nil {
		return 0, outbox.AttemptLog{}, fmt.Errorf("decode ledger expiry: %w", err)
	}
	r := outbox.Row{
		Key: p.Row.Key, EventID: p.EventID, Topic: p.Row.Topic, TenantID: p.TenantID, Type: p.Type,
		Status: outbox.StatusProcessing, NextRetryAt: p.Until, LeaseUntil: p.Until, LeaseOwner: p.Owner,
		CreatedAt: p.Now, UpdatedAt: p.Now,
	}
	ri := toRowItem(r, time.Unix(led.ExpiresAt, 0))
	ri.AttemptOf, ri.Attempt = p.Owner, 1
	item, err := attributevalue.MarshalMap(ri)
	if err != nil {
		return 0, outbox.AttemptLog{}, err
	}
	_, err = e.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{ConditionCheck: &ddbtypes.ConditionCheck{TableName: aws.String(e.Table), Key: ledgerKey, ConditionExpression: aws.String("attribute_exists(pk)")}},
		{Put: &ddbtypes.Put{TableName: aws.String(e.Table), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
	}})
	if class, at := classify(err); err != nil && class == txConditionFailed {
		if at == 0 {
			return consume.LedgerMissing, outbox.AttemptLog{}, nil
		}
		return 0, outbox.AttemptLog{}, errCondition
	}
	if err != nil {
		return 0, outbox.AttemptLog{}, err
	}
	log := claimLog(nil, false, time.Time{})
	log.Room = completionRoom(item, p.Now)
	return consume.Claimed, log, nil
}

// MarkCompleted records the lease owner's success: status completed (the
// row leaves the due index; nextRetryAt = completion time), lease cleared,
// completedAt set.
func (e *Events) MarkCompleted(ctx context.Context, c consume.Completion) error {
	err := e.releaseProcessing(ctx, processingRelease{
		Row: c.Row, To: outbox.StatusCompleted, Owner: c.Owner, NextRetryAt: c.Now, Completed: true, Now: c.Now,
		Attempt: c.Attempt, Log: c.Log,
	})
	if errors.Is(err, errCondition) {
		return outbox.ErrLeaseLost
	}
	if err != nil {
		return fmt.Errorf("dynamo: mark completed %s: %w", c.Row, err)
	}
	return nil
}

// MarkRetry hands the owner's row back after a failure: status enqueued
// (the message is still on, or back on, its queue), lease cleared,
// lastError recorded for the operator and the DLQ archiver, nextRetryAt =
// when the message is expected back (0 when it went to the DLQ). The row
// stays in the due index: the sweeper looks at it then.
func (e *Events) MarkRetry(ctx context.Context, r consume.Release) error {
	err := e.releaseProcessing(ctx, processingRelease{
		Row: r.Row, To: outbox.StatusEnqueued, Owner: r.Owner, NextRetryAt: r.RetryAt, LastError: r.LastError, Now: r.Now,
		Attempt: r.Attempt, Log: r.Log,
	})
	if errors.Is(err, errCondition) {
		return outbox.ErrLeaseLost
	}
	if err != nil {
		return fmt.Errorf("dynamo: mark retry %s: %w", r.Row, err)
	}
	return nil
}

// processingRelease is how a processing row's lease ends: the row moves To
// a status with its lease cleared, conditional on Owner still holding it
// (and, with SameLease, on it being exactly the lease that ended at
// LeaseUntil).
type processingRelease struct {
	Row   outbox.RowRef
	To    outbox.Status
	Owner string
	// SameLease also requires the lease to be the one seen, ending at
	// LeaseUntil (the sweeper settling a lease that ended long ago, Settle).
	SameLease   bool
	LeaseUntil  time.Time
	NextRetryAt time.Time
	// Completed sets completedAt; otherwise LastError is recorded (the
	// reason the row goes back, for the operator and the DLQ archiver).
	Completed bool
	LastError string
	Now       time.Time
	// Attempt (with Log.Lost) is the delivery attempt the write records
	// (attempts.go).
	Attempt outbox.Attempt
	Log     outbox.AttemptLog
}

// releaseProcessing is the one write that ends a processing row's lease,
// for the consumer (MarkCompleted, MarkRetry) and the sweeper (Settle). It
// returns errCondition when the lease is no longer as given.
func (e *Events) releaseProcessing(ctx context.Context, r processingRelease) error {
	// The status's placeholder is named after it (SET #s = :completed), so
	// the expression says what the write does, in logs and fault matchers.
	to := ":" + string(r.To)
	expr := "SET #s = " + to + ", leaseOwner = :empty, leaseUntil = :zero, nextRetryAt = :next, updatedAt = :now"
	cond := "#s = :processing AND leaseOwner = :o"
	values := map[string]ddbtypes.AttributeValue{
		":processing": str(string(outbox.StatusProcessing)),
		":empty":      str(""),
		":zero":       num(0),
		":next":       num(millis(r.NextRetryAt)),
		":now":        str(FormatTime(r.Now)),
		":o":          str(r.Owner),
	}
	values[to] = str(string(r.To))
	if r.Completed {
		expr += ", completedAt = :now"
	} else {
		expr += ", lastError = :e"
		values[":e"] = str(truncate.String(r.LastError, outbox.MaxErrorLen))
	}
	if r.SameLease {
		cond += " AND leaseUntil = :lu"
		values[":lu"] = num(millis(r.LeaseUntil))
	}
	added := newAttempts(r.Attempt, r.Log)
	write := func(expr, cond string) error {
		if r.To.Settled() {
			expr = leaveDue(expr)
		} else {
			expr = keepDue(expr)
		}
		return e.update(ctx, r.Row, expr, cond, values)
	}
	if len(added) == 0 {
		return write(expr, cond)
	}
	if !r.Log.Known {
		return write(appendAttempts(expr, values, added), cond)
	}
	// Replace the list the claim read: only the lease holder writes it,
	// unless an erasure marked the row meanwhile (then append, without
	// the answers).
	if r.Completed {
		added = fitAnswer(r.Log.Kept, added, r.Log.Room)
	}
	values[":tries"] = triesValue(attemptList(r.Log.Kept, added))
	err := write(expr+", "+attrTries+" = :tries", cond+" AND attribute_not_exists(erasedAt)")
	if !errors.Is(err, errCondition) {
		return err
	}
	row, found, rerr := e.Row(ctx, r.Row)
	switch {
	case rerr != nil:
		return rerr
	case !found || row.ErasedAt.IsZero() || row.Status != outbox.StatusProcessing || row.LeaseOwner != r.Owner:
		return errCondition
	}
	delete(values, ":tries")
	return write(appendAttempts(expr, values, redacted(added)), cond)
}

// appendAttempts adds the attempts to the row's list (without reading it:
// a carried completion, a row an erasure marked meanwhile): no trimming;
// their answers must be gone already where they may not be written.
func appendAttempts(expr string, values map[string]ddbtypes.AttributeValue, added []outbox.Attempt) string {
	values[":tries"] = triesValue(added)
	values[":noTries"] = &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{}}
	return expr + ", " + attrTries + " = list_append(if_not_exists(" + attrTries + ", :noTries), :tries)"
}

// claimLog is the AttemptLog of a claim that found kept attempts on the
// row; lostSince is set when the row was processing under a lease that
// ended without an outcome (since then: its claim time).
func claimLog(kept []outbox.Attempt, lost bool, lostSince time.Time) outbox.AttemptLog {
	log := outbox.AttemptLog{Kept: kept, Known: true}
	last := 0
	if len(kept) > 0 {
		last = kept[len(kept)-1].N
	}
	if lost {
		last++
		log.Lost = &outbox.Attempt{N: last, At: lostSince, Outcome: outbox.OutcomeLost}
	}
	log.Next = last + 1
	return log
}

// claimedItem is the row as a claim leaves it (old: the row before it).
func claimedItem(old map[string]ddbtypes.AttributeValue, p consume.Processing, attempt int) map[string]ddbtypes.AttributeValue {
	item := maps.Clone(old)
	item["status"] = str(string(outbox.StatusProcessing))
	item["duePk"] = str(table.DuePartition(p.Row.Key, p.Row.Topic))
	item["leaseOwner"], item["attemptOf"] = str(p.Owner), str(p.Owner)
	item["leaseUntil"], item["attempt"] = num(millis(p.Until)), num(int64(attempt))
	item["updatedAt"] = str(FormatTime(p.Now))
	delete(item, "sweepPk")
	return item
}

// completionRoom is how many bytes a completion of the claimed row may add
// (its attempt record) without a write unit more than it costs without
// them: DynamoDB bills the larger of the item before and after, per
// started KB.
func completionRoom(claimed map[string]ddbtypes.AttributeValue, now time.Time) int {
	done := maps.Clone(claimed)
	done["status"] = str(string(outbox.StatusCompleted))
	done["leaseOwner"], done["leaseUntil"] = str(""), num(0)
	done["nextRetryAt"] = num(millis(now))
	done["updatedAt"], done["completedAt"] = str(FormatTime(now)), str(FormatTime(now))
	delete(done, "duePk")
	before, after := table.ItemSize(claimed), table.ItemSize(done)
	units := (max(before, after) + 1023) / 1024
	return units*1024 - after
}
