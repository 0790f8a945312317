package dynamo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/cachepurge"
)

// Purge is the cache purge service's table: jobs (job:<id>), tier 1
// coalesce locks (coalesce:<tenant>:<hash>), daily counters (partition
// stats:daily:<day>, one item per tenant, so a day's rollup is one Query)
// and the dead-letter mirror (dlq:<jobId>, indexed under dlq:recent by
// failure time). Every item carries expiresAt for the table's TTL; readers
// check logical expiry themselves, since TTL deletes late.
type Purge struct {
	Client *dynamodb.Client
	Table  string
	// Now is the clock of TTL stamps (default time.Now).
	Now func() time.Time
}

var (
	_ cachepurge.Jobs      = (*Purge)(nil)
	_ cachepurge.Telemetry = (*Purge)(nil)
	_ cachepurge.Reports   = (*Purge)(nil)
)

// Partition keys of the purge table.
func purgeJobPK(id string) string            { return "job:" + id }
func purgeLockPK(tenant, hash string) string { return "coalesce:" + tenant + ":" + hash }
func purgeStatsPK(day string) string         { return "stats:daily:" + day }
func purgeDLQPK(id string) string            { return "dlq:" + id }

const (
	purgeRecentPK = "dlq:recent"
	purgeItemSK   = "-"
)

func (p *Purge) key(pk, sk string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{table.AttrPK: str(pk), table.AttrSK: str(sk)}
}

func (p *Purge) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Lock reads a coalesce lock.
func (p *Purge) Lock(ctx context.Context, tenant, hash string) (cachepurge.Lock, bool, error) {
	out, err := p.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(p.Table), Key: p.key(purgeLockPK(tenant, hash), purgeItemSK), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return cachepurge.Lock{}, false, fmt.Errorf("dynamo: purge lock: %w", err)
	}
	if out.Item == nil {
		return cachepurge.Lock{}, false, nil
	}
	until, _ := strconv.ParseInt(numOf(out.Item["until"]), 10, 64)
	return cachepurge.Lock{TenantID: tenant, Hash: hash, JobID: strOf(out.Item["jobId"]), Until: time.UnixMilli(until)}, true, nil
}

// Create writes a job and its lock in one transaction, the lock
// conditional on being absent or still the seen one.
func (p *Purge) Create(ctx context.Context, c cachepurge.CreateParams) error {
	job, err := p.jobItem(c.Job)
	if err != nil {
		return err
	}
	lock := p.key(purgeLockPK(c.Lock.TenantID, c.Lock.Hash), purgeItemSK)
	lock["jobId"] = str(c.Lock.JobID)
	lock["until"] = num(c.Lock.Until.UnixMilli())
	lock[table.AttrExpiresAt] = num(p.now().Add(cachepurge.CoalesceTTL).Unix())
	cond, values := "attribute_not_exists(pk)", map[string]ddbtypes.AttributeValue(nil)
	if c.Seen != "" {
		cond, values = "jobId = :seen", map[string]ddbtypes.AttributeValue{":seen": str(c.Seen)}
	}
	_, err = p.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Put: &ddbtypes.Put{TableName: aws.String(p.Table), Item: lock, ConditionExpression: aws.String(cond), ExpressionAttributeValues: values}},
		{Put: &ddbtypes.Put{TableName: aws.String(p.Table), Item: job, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
	}})
	if class, _ := classify(err); err != nil && class == txConditionFailed {
		return cachepurge.ErrLockTaken
	}
	if err != nil {
		return fmt.Errorf("dynamo: create purge job: %w", err)
	}
	return nil
}

// ReleaseLock expires a lock that still points at l.JobID (an update, not
// a delete: no role of the platform may delete items).
func (p *Purge) ReleaseLock(ctx context.Context, l cachepurge.Lock) error {
	_, err := p.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(p.Table), Key: p.key(purgeLockPK(l.TenantID, l.Hash), purgeItemSK),
		UpdateExpression:          aws.String("SET #u = :zero"),
		ConditionExpression:       aws.String("jobId = :j"),
		ExpressionAttributeNames:  map[string]string{"#u": "until"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":j": str(l.JobID), ":zero": num(0)},
	})
	var ccf *ddbtypes.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("dynamo: release purge lock: %w", err)
	}
	return nil
}

func (p *Purge) jobItem(j cachepurge.Job) (map[string]ddbtypes.AttributeValue, error) {
	body, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	item := p.key(purgeJobPK(j.JobID), purgeItemSK)
	item["job"] = str(string(body))
	item[table.AttrStatus] = str(string(j.Status))
	item[table.AttrTenantID] = str(j.TenantID)
	item[table.AttrExpiresAt] = num(j.ExpiresAt().Unix())
	return item, nil
}

func decodeJob(item map[string]ddbtypes.AttributeValue) (cachepurge.Job, error) {
	var j cachepurge.Job
	if err := json.Unmarshal([]byte(strOf(item["job"])), &j); err != nil {
		return j, fmt.Errorf("dynamo: decode purge job: %w", err)
	}
	return j, nil
}

// Job reads a job.
func (p *Purge) Job(ctx context.Context, id string) (cachepurge.Job, bool, error) {
	out, err := p.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(p.Table), Key: p.key(purgeJobPK(id), purgeItemSK), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return cachepurge.Job{}, false, fmt.Errorf("dynamo: read purge job: %w", err)
	}
	if out.Item == nil {
		return cachepurge.Job{}, false, nil
	}
	j, err := decodeJob(out.Item)
	return j, err == nil, err
}

// Ensure creates j unless its id exists.
func (p *Purge) Ensure(ctx context.Context, j cachepurge.Job) (cachepurge.Job, bool, error) {
	item, err := p.jobItem(j)
	if err != nil {
		return j, false, err
	}
	_, err = p.Client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(p.Table), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *ddbtypes.ConditionalCheckFailedException
	switch {
	case err == nil:
		return j, true, nil
	case errors.As(err, &ccf) && ccf.Item != nil:
		stored, derr := decodeJob(ccf.Item)
		return stored, false, derr
	case errors.As(err, &ccf):
		stored, ok, rerr := p.Job(ctx, j.JobID)
		if rerr == nil && !ok {
			rerr = fmt.Errorf("dynamo: purge job %s vanished", j.JobID)
		}
		return stored, false, rerr
	}
	return j, false, fmt.Errorf("dynamo: ensure purge job: %w", err)
}

// Save writes a job.
func (p *Purge) Save(ctx context.Context, j cachepurge.Job) error {
	item, err := p.jobItem(j)
	if err != nil {
		return err
	}
	if _, err := p.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(p.Table), Item: item}); err != nil {
		return fmt.Errorf("dynamo: save purge job: %w", err)
	}
	return nil
}

// Count adds to a tenant's day with one atomic ADD.
func (p *Purge) Count(ctx context.Context, c cachepurge.Counts) error {
	day, err := time.Parse(time.DateOnly, c.Day)
	if err != nil {
		return fmt.Errorf("dynamo: purge stats day %q: %w", c.Day, err)
	}
	_, err = p.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(p.Table), Key: p.key(purgeStatsPK(c.Day), c.TenantID),
		UpdateExpression: aws.String("ADD purges :p, tags :t, retries429 :r, failures :f SET expiresAt = :x"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":p": num(int64(c.Purges)), ":t": num(int64(c.Tags)), ":r": num(int64(c.Retries429)), ":f": num(int64(c.Failures)),
			":x": num(day.Add(24*time.Hour + cachepurge.TelemetryTTL).Unix()),
		},
	})
	if err != nil {
		return fmt.Errorf("dynamo: count purge stats: %w", err)
	}
	return nil
}

// Daily reads a day's counters, every tenant.
func (p *Purge) Daily(ctx context.Context, day string) ([]cachepurge.Daily, error) {
	var out []cachepurge.Daily
	var start map[string]ddbtypes.AttributeValue
	for {
		res, err := p.Client.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(p.Table), KeyConditionExpression: aws.String("pk = :pk"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": str(purgeStatsPK(day))},
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return nil, fmt.Errorf("dynamo: purge stats: %w", err)
		}
		for _, it := range res.Items {
			out = append(out, cachepurge.Daily{Day: day, TenantID: strOf(it[table.AttrSK]),
				Purges: intOf(it["purges"]), Tags: intOf(it["tags"]), Retries429: intOf(it["retries429"]), Failures: intOf(it["failures"])})
		}
		if res.LastEvaluatedKey == nil {
			return out, nil
		}
		start = res.LastEvaluatedKey
	}
}

// DeadLetter writes the mirror record and its index entry.
func (p *Purge) DeadLetter(ctx context.Context, d cachepurge.DeadLetter) error {
	body, err := json.Marshal(d)
	if err != nil {
		return err
	}
	exp := num(d.FailedAt.Add(cachepurge.TelemetryTTL).Unix())
	rec := p.key(purgeDLQPK(d.JobID), purgeItemSK)
	rec["record"], rec[table.AttrExpiresAt] = str(string(body)), exp
	idx := p.key(purgeRecentPK, d.FailedAt.UTC().Format(time.RFC3339Nano)+"#"+d.JobID)
	idx["record"], idx[table.AttrExpiresAt] = str(string(body)), exp
	_, err = p.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Put: &ddbtypes.Put{TableName: aws.String(p.Table), Item: rec}},
		{Put: &ddbtypes.Put{TableName: aws.String(p.Table), Item: idx}},
	}})
	if err != nil {
		return fmt.Errorf("dynamo: record purge dead letter: %w", err)
	}
	return nil
}

// RecentDeadLetters reads the index newest first, skipping expired
// entries.
func (p *Purge) RecentDeadLetters(ctx context.Context, limit int) ([]cachepurge.DeadLetter, error) {
	cutoff := p.now().Add(-cachepurge.TelemetryTTL).UTC().Format(time.RFC3339Nano)
	res, err := p.Client.Query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(p.Table), KeyConditionExpression: aws.String("pk = :pk AND sk > :cut"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": str(purgeRecentPK), ":cut": str(cutoff)},
		ScanIndexForward:          aws.Bool(false), Limit: aws.Int32(int32(limit)),
	})
	if err != nil {
		return nil, fmt.Errorf("dynamo: purge dead letters: %w", err)
	}
	out := make([]cachepurge.DeadLetter, 0, len(res.Items))
	for _, it := range res.Items {
		var d cachepurge.DeadLetter
		if err := json.Unmarshal([]byte(strOf(it["record"])), &d); err != nil {
			return nil, fmt.Errorf("dynamo: decode purge dead letter: %w", err)
		}
		out = append(out, d)
	}
	return out, nil
}

func strOf(v ddbtypes.AttributeValue) string {
	if s, ok := v.(*ddbtypes.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

func numOf(v ddbtypes.AttributeValue) string {
	if n, ok := v.(*ddbtypes.AttributeValueMemberN); ok {
		return n.Value
	}
	return "0"
}

func intOf(v ddbtypes.AttributeValue) int {
	n, _ := strconv.Atoi(numOf(v))
	return n
}
