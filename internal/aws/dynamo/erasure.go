package dynamo

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// Fence turns a job step's lease into a condition check on its job item:
// a transaction that carries it commits only while the step holds the job
// at the lease's version (no takeover, cancel or restart since the claim).
type Fence struct {
	JobsTable string
}

// Check is the condition check of lease.
func (f Fence) Check(l jobs.Lease) ddbtypes.TransactWriteItem {
	return ddbtypes.TransactWriteItem{ConditionCheck: &ddbtypes.ConditionCheck{
		TableName:                 aws.String(f.JobsTable),
		Key:                       map[string]ddbtypes.AttributeValue{table.AttrPK: str(jobPK(l.JobID)), table.AttrSK: str(jobSK)},
		ConditionExpression:       aws.String("version = :v"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":v": num(int64(l.Version))},
	}}
}

// Holds reports ErrFenced unless the step still holds its job (a strongly
// consistent read of the job's version). Writes outside DynamoDB (S3
// deletes) cannot carry a condition; they are preceded by this check.
func (e *Erasure) Holds(ctx context.Context, lease jobs.Lease) error {
	out, err := e.Events.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:            aws.String(e.Fence.JobsTable),
		Key:                  map[string]ddbtypes.AttributeValue{table.AttrPK: str(jobPK(lease.JobID)), table.AttrSK: str(jobSK)},
		ConsistentRead:       aws.Bool(true),
		ProjectionExpression: aws.String("version"),
	})
	if err != nil {
		return fmt.Errorf("dynamo: read job %s: %w", lease.JobID, err)
	}
	if v, ok := out.Item["version"].(*ddbtypes.AttributeValueMemberN); !ok || v.Value != strconv.Itoa(lease.Version) {
		return ErrFenced
	}
	return nil
}

// ErrFenced: the write was refused because the step no longer holds its
// job (the lease moved on); nothing changed.
var ErrFenced = fmt.Errorf("dynamo: fenced write refused: %w", jobs.ErrConflict)

// Erasure is the subject erasure's store: reads through Events and
// Incidents, fenced writes to both.
type Erasure struct {
	Events    *Events
	Incidents *Incidents
	Fence     Fence
}

// Load reads an event's ledger item and outbox rows.
func (e *Erasure) Load(ctx context.Context, key string) (ledger.Record, []outbox.Row, error) {
	return e.Events.Load(ctx, key)
}

// RedactDispatch overwrites an outbox row's lastError with
// incident.ErasedText and removes the subscriber's answers its delivery
// attempts keep (marked erased, their lengths kept), fenced; a row that
// expired meanwhile is left gone. The row is read first (the attempts are
// rewritten as read, conditional on the row being unchanged, so an
// attempt recorded meanwhile is read again, not lost).
func (e *Erasure) RedactDispatch(ctx context.Context, lease jobs.Lease, row outbox.RowRef) error {
	const reads = 3 // an outcome recorded meanwhile: read the row again
	for range reads {
		cur, found, err := e.Events.Row(ctx, row)
		if err != nil {
			return fmt.Errorf("dynamo: redact dispatch %s: %w", row, err)
		}
		if !found {
			return nil
		}
		expr, cond := "SET lastError = :e", "attribute_exists(pk)"
		values := map[string]ddbtypes.AttributeValue{":e": str(incident.ErasedText)}
		if answered(cur.DeliveryAttempts) {
			expr, cond = redactAttempts(expr, cond, values, cur)
		}
		_, err = e.Events.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
			e.Fence.Check(lease),
			{Update: &ddbtypes.Update{
				TableName:                 aws.String(e.Events.Table),
				Key:                       map[string]ddbtypes.AttributeValue{table.AttrPK: str(EventPK(row.Key)), table.AttrSK: str(DispatchSK(row.Topic))},
				UpdateExpression:          aws.String(expr),
				ConditionExpression:       aws.String(cond),
				ExpressionAttributeValues: values,
			}},
		}})
		if class, at := classify(err); err != nil && class == txConditionFailed {
			if at == 0 {
				return ErrFenced
			}
			continue // gone or changed meanwhile: read it again
		}
		if err != nil {
			return fmt.Errorf("dynamo: redact dispatch %s: %w", row, err)
		}
		return nil
	}
	return fmt.Errorf("dynamo: redact dispatch %s: the row kept changing", row)
}

// redactAttempts adds to an erasure's row update the row's delivery
// attempts without their answers, conditional on the row being as read
// (updatedAt: every outcome write sets it).
func redactAttempts(expr, cond string, values map[string]ddbtypes.AttributeValue, r outbox.Row) (string, string) {
	values[":tries"] = triesValue(redacted(r.DeliveryAttempts))
	values[":seenAt"] = str(FormatTime(r.UpdatedAt))
	return expr + ", " + attrTries + " = :tries", cond + " AND updatedAt = :seenAt"
}

// Get reads an incident.
func (e *Erasure) Get(ctx context.Context, id string) (incident.Incident, error) {
	return e.Incidents.Get(ctx, id)
}

// EraseEvent redacts a ledger item's payload and marks its outbox rows
// erased (the erasure marker: erasedAt; a quoted subscriber answer in
// lastError and in the delivery attempts redacted; out of the sweeper's
// indexes), in one transaction,
// fenced. The claim-check reference is overwritten with NULL (nothing is
// REMOVEd from the ledger item). An event that expired meanwhile is left
// gone; a row gone meanwhile fails the write (the caller loads again).
func (e *Erasure) EraseEvent(ctx context.Context, lease jobs.Lease, p ledger.EraseParams) error {
	items := []ddbtypes.TransactWriteItem{
		e.Fence.Check(lease),
		{Update: &ddbtypes.Update{
			TableName:                 aws.String(e.Events.Table),
			Key:                       map[string]ddbtypes.AttributeValue{table.AttrPK: str(EventPK(p.Key)), table.AttrSK: str(ledgerSK)},
			UpdateExpression:          aws.String("SET payload = :p, payloadZ = :null, payloadGz = :null, payloadRef = :null, erasedAt = :at"),
			ConditionExpression:       aws.String("attribute_exists(pk)"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": str(string(ledger.ErasedPayload)), ":null": &ddbtypes.AttributeValueMemberNULL{Value: true}, ":at": str(FormatTime(p.At))},
		}},
	}
	for _, r := range p.Rows {
		expr := "SET erasedAt = :at"
		values := map[string]ddbtypes.AttributeValue{":at": str(FormatTime(p.At))}
		cond := "attribute_exists(pk)"
		var names map[string]string
		if r.LastError != "" {
			expr += ", lastError = :e"
			values[":e"] = str(incident.ErasedText)
		}
		if answered(r.DeliveryAttempts) {
			expr, cond = redactAttempts(expr, cond, values, r)
		}
		if r.Receipted {
			// Sent in a batch, its send on the receipt only: the consumer
			// will refuse the erased row, so record the send here, or the
			// row would read as unsent once the receipt expires.
			expr += ", " + recordSent(values)
			values[":pending"], values[":owner"] = str(string(outbox.StatusPending)), str(r.LeaseOwner)
			cond += " AND #s = :pending AND leaseOwner = :owner"
			names = map[string]string{"#s": "status"}
		}
		items = append(items, ddbtypes.TransactWriteItem{Update: &ddbtypes.Update{
			TableName:                 aws.String(e.Events.Table),
			Key:                       map[string]ddbtypes.AttributeValue{table.AttrPK: str(EventPK(p.Key)), table.AttrSK: str(DispatchSK(r.Topic))},
			UpdateExpression:          aws.String(leaveDue(expr)),
			ConditionExpression:       aws.String(cond),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
		}})
	}
	_, err := e.Events.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if class, at := classify(err); err != nil && class == txConditionFailed {
		switch at {
		case 0:
			return ErrFenced
		case 1:
			return nil // the event expired meanwhile: nothing left to erase
		}
		return fmt.Errorf("dynamo: erase event %s: a dispatch row changed meanwhile: %w", p.Key, err)
	}
	if err != nil {
		return fmt.Errorf("dynamo: erase event %s: %w", p.Key, err)
	}
	return nil
}

// SaveFenced writes an incident (optimistic on its version), fenced.
func (e *Erasure) SaveFenced(ctx context.Context, lease jobs.Lease, inc incident.Incident) error {
	put, err := e.Incidents.put(inc)
	if err != nil {
		return err
	}
	_, err = e.Incidents.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		e.Fence.Check(lease), {Put: put},
	}})
	if class, at := classify(err); err != nil && class == txConditionFailed {
		if at == 0 {
			return ErrFenced
		}
		return fmt.Errorf("dynamo: redact incident %s: %w", inc.ID, incident.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("dynamo: redact incident %s: %w", inc.ID, err)
	}
	return nil
}
