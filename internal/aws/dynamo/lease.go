package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/outbox"
)

// Claim takes the lease on a pending or failed row nobody holds. The due
// index key (nextRetryAt) moves to the lease expiry, so concurrent sweepers
// stop seeing the row at once. An erased row is never claimed: its
// consumer would refuse the message.
func (e *Events) Claim(ctx context.Context, c outbox.ClaimParams) (bool, error) {
	until := millis(c.Now.Add(c.Lease))
	owner, now := c.Owner, c.Now
	values := map[string]ddbtypes.AttributeValue{
		":o":       str(owner),
		":lu":      num(until),
		":now":     str(FormatTime(now)),
		":nowms":   num(millis(now)),
		":pending": str(string(outbox.StatusPending)),
		":failed":  str(string(outbox.StatusFailed)),
	}
	err := e.update(ctx, c.Row,
		enterDue("SET leaseOwner = :o, leaseUntil = :lu, nextRetryAt = :lu, updatedAt = :now", c.Row, values),
		"attribute_exists(pk) AND attribute_not_exists(erasedAt) AND (#s = :pending OR #s = :failed) AND leaseUntil < :nowms", values)
	if errors.Is(err, errCondition) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("dynamo: claim %s: %w", c.Row, err)
	}
	return true, nil
}

// MarkEnqueued records a successful send by the lease owner and releases the
// lease. The row's due index entry is left as it is (nextRetryAt at the
// lease's end): moving it would cost an index write on every event, and by
// then the consumer has usually completed the row, which takes it out. A
// row the sweeper finds still enqueued leaves the index then.
func (e *Events) MarkEnqueued(ctx context.Context, r outbox.RowRef, owner string, now time.Time) error {
	values := map[string]ddbtypes.AttributeValue{
		":enq":     str(string(outbox.StatusEnqueued)),
		":empty":   str(""),
		":zero":    num(0),
		":now":     str(FormatTime(now)),
		":o":       str(owner),
		":pending": str(string(outbox.StatusPending)),
		":failed":  str(string(outbox.StatusFailed)),
	}
	err := e.update(ctx, r,
		keepDue("SET #s = :enq, leaseOwner = :empty, leaseUntil = :zero, updatedAt = :now"),
		"leaseOwner = :o AND (#s = :pending OR #s = :failed)", values)
	if errors.Is(err, errCondition) {
		return outbox.ErrLeaseLost
	}
	if err != nil {
		return fmt.Errorf("dynamo: mark enqueued %s: %w", r, err)
	}
	return nil
}

// MarkFailed records a failed send by the lease owner: attempts, lastError
// and the next retry, lease released. The row comes due again at the next
// retry, unless it carries the erasure marker: no claim takes an erased row
// (Claim, ClaimDue), so it leaves the due index instead of coming due for a
// sweeper that could only skip it (issue 32 item 9: every sweep reported it
// skipped and the outbox lag grew until the row expired). The two cases
// are two conditions: the first write refused tries the second, off the
// happy path.
func (e *Events) MarkFailed(ctx context.Context, f outbox.Failure) error {
	values := map[string]ddbtypes.AttributeValue{
		":failed":  str(string(outbox.StatusFailed)),
		":pending": str(string(outbox.StatusPending)),
		":a":       num(int64(f.Attempts)),
		":e":       str(f.Err),
		":next":    num(millis(f.NextRetryAt)),
		":empty":   str(""),
		":zero":    num(0),
		":now":     str(FormatTime(f.Now)),
		":o":       str(f.Owner),
	}
	set := "SET #s = :failed, attempts = :a, lastError = :e, nextRetryAt = :next, leaseOwner = :empty, leaseUntil = :zero, updatedAt = :now"
	held := "leaseOwner = :o AND (#s = :pending OR #s = :failed)"
	err := e.update(ctx, f.Row, enterDue(set, f.Row, values), held+" AND "+notErased, values) // failed is swept
	if errors.Is(err, errCondition) {
		delete(values, ":dp") // enterDue's: an unused value is refused
		err = e.update(ctx, f.Row, leaveDue(set), held+" AND attribute_exists(erasedAt)", values)
	}
	if errors.Is(err, errCondition) {
		return outbox.ErrLeaseLost
	}
	if err != nil {
		return fmt.Errorf("dynamo: mark failed %s: %w", f.Row, err)
	}
	return nil
}

var errCondition = errors.New("condition failed")

func (e *Events) update(ctx context.Context, r outbox.RowRef, expr, cond string, values map[string]ddbtypes.AttributeValue) error {
	in := &dynamodb.UpdateItemInput{
		TableName:                 aws.String(e.Table),
		Key:                       rowKey(r),
		UpdateExpression:          aws.String(expr),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: values,
	}
	_, err := e.Client.UpdateItem(ctx, in)
	var ccf *ddbtypes.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return errCondition
	}
	return err
}
