package dynamo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/jobs"
)

// Jobs is the jobs table (table.Jobs): a job item per job (its state as
// JSON plus the attributes its indexes read), and an item per idempotency
// key. Every job write is a conditional put on the version read, so a
// terminal job is rewritten without its due index attributes (sparse) and
// nothing is ever REMOVEd.
type Jobs struct {
	Client *dynamodb.Client
	Table  string
}

var _ jobs.Store = (*Jobs)(nil)

const (
	jobSK    = "JOB"
	jobKeySK = "KEY"
)

func jobPK(id string) string { return "JOB#" + id }

func jobKeyPK(tenant, kind, key string) string { return "KEY#" + tenant + "#" + kind + "#" + key }

func (s *Jobs) key(pk, sk string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{table.AttrPK: str(pk), table.AttrSK: str(sk)}
}

func (s *Jobs) item(j jobs.Job) (map[string]ddbtypes.AttributeValue, error) {
	body, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	it := s.key(jobPK(j.ID), jobSK)
	it["job"] = str(string(body))
	it["version"] = num(int64(j.Version))
	it[table.AttrTenantID] = str(j.TenantID)
	it[table.AttrKind] = str(j.Kind)
	it[table.AttrStatus] = str(string(j.Status))
	it[table.AttrCreatedAt] = str(FormatTime(j.CreatedAt))
	// A failed job stays due while its incident is to be confirmed
	// (jobs.Store.Update).
	if (!j.Status.Terminal() || j.Status == jobs.StatusFailed) && !j.DueAt.IsZero() {
		it[table.AttrDuePK] = str("due#" + strconv.Itoa(table.JobsDueShard(j.ID)))
		it[table.AttrDueAt] = num(j.DueAt.UnixMilli())
	}
	if !j.ExpiresAt.IsZero() {
		it[table.AttrExpiresAt] = num(j.ExpiresAt.Unix())
	}
	return it, nil
}

func decodeJobItem(it map[string]ddbtypes.AttributeValue) (jobs.Job, error) {
	var j jobs.Job
	if err := json.Unmarshal([]byte(strOf(it["job"])), &j); err != nil {
		return j, fmt.Errorf("dynamo: decode job: %w", err)
	}
	return j, nil
}

// Create writes the job and its idempotency key in one transaction.
func (s *Jobs) Create(ctx context.Context, j jobs.Job) error {
	job, err := s.item(j)
	if err != nil {
		return err
	}
	k := s.key(jobKeyPK(j.TenantID, j.Kind, j.IdempotencyKey), jobKeySK)
	k["jobId"] = str(j.ID)
	_, err = s.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Put: &ddbtypes.Put{TableName: aws.String(s.Table), Item: k, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		{Put: &ddbtypes.Put{TableName: aws.String(s.Table), Item: job, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
	}})
	if class, _ := classify(err); err != nil && class == txConditionFailed {
		return jobs.ErrExists
	}
	if err != nil {
		return fmt.Errorf("dynamo: create job: %w", err)
	}
	return nil
}

// ByKey reads the job of an idempotency key.
func (s *Jobs) ByKey(ctx context.Context, tenant, kind, key string) (jobs.Job, bool, error) {
	out, err := s.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.Table), Key: s.key(jobKeyPK(tenant, kind, key), jobKeySK), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return jobs.Job{}, false, fmt.Errorf("dynamo: read job key: %w", err)
	}
	if out.Item == nil {
		return jobs.Job{}, false, nil
	}
	return s.Get(ctx, strOf(out.Item["jobId"]))
}

// Get reads a job.
func (s *Jobs) Get(ctx context.Context, id string) (jobs.Job, bool, error) {
	out, err := s.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.Table), Key: s.key(jobPK(id), jobSK), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return jobs.Job{}, false, fmt.Errorf("dynamo: read job: %w", err)
	}
	if out.Item == nil {
		return jobs.Job{}, false, nil
	}
	j, err := decodeJobItem(out.Item)
	return j, err == nil, err
}

// Update writes j if the stored version is j.Version-1; a terminal job's
// idempotency key gets its expiry in the same transaction, and a revived
// one's loses it.
func (s *Jobs) Update(ctx context.Context, j jobs.Job) error {
	it, err := s.item(j)
	if err != nil {
		return err
	}
	put := &ddbtypes.Put{
		TableName: aws.String(s.Table), Item: it, ConditionExpression: aws.String("version = :prev"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":prev": num(int64(j.Version - 1))},
	}
	// The idempotency key follows the job: it expires with a finished job
	// and stops expiring when a finished job is revived (a NULL is not a
	// number, so TTL ignores the item; the embedded emulator refuses a
	// top-level REMOVE). Otherwise only the job item is written.
	var keyExpiry ddbtypes.AttributeValue
	switch {
	case !j.ExpiresAt.IsZero():
		keyExpiry = num(j.ExpiresAt.Unix())
	case j.Revived:
		keyExpiry = &ddbtypes.AttributeValueMemberNULL{Value: true}
	}
	if keyExpiry == nil {
		_, err = s.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: put.TableName, Item: put.Item,
			ConditionExpression: put.ConditionExpression, ExpressionAttributeValues: put.ExpressionAttributeValues})
		var ccf *ddbtypes.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			return jobs.ErrConflict
		}
	} else {
		_, err = s.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
			{Put: put},
			{Update: &ddbtypes.Update{
				TableName: aws.String(s.Table), Key: s.key(jobKeyPK(j.TenantID, j.Kind, j.IdempotencyKey), jobKeySK),
				UpdateExpression:          aws.String("SET expiresAt = :x"),
				ConditionExpression:       aws.String("jobId = :id"),
				ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":x": keyExpiry, ":id": str(j.ID)},
			}},
		}})
		if class, at := classify(err); err != nil && class == txConditionFailed && at == 0 {
			return jobs.ErrConflict
		}
	}
	if err != nil {
		return fmt.Errorf("dynamo: update job %s: %w", j.ID, err)
	}
	return nil
}

// Shards is table.JobsDueShards.
func (s *Jobs) Shards() int { return table.JobsDueShards }

// Due pages one due partition oldest first.
func (s *Jobs) Due(ctx context.Context, p jobs.DueParams) (jobs.DuePage, error) {
	in := &dynamodb.QueryInput{
		TableName: aws.String(s.Table), IndexName: aws.String(table.IndexJobsDue),
		KeyConditionExpression: aws.String("duePk = :p AND dueAt <= :now"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":p": str("due#" + strconv.Itoa(p.Shard)), ":now": num(p.Now.UnixMilli()),
		},
		Limit: aws.Int32(int32(max(p.Limit, 1))),
	}
	if p.Cursor != "" {
		start, err := decodeKey(p.Cursor)
		if err != nil {
			return jobs.DuePage{}, fmt.Errorf("dynamo: due jobs: invalid cursor: %w", err)
		}
		in.ExclusiveStartKey = start
	}
	out, err := s.Client.Query(ctx, in)
	if err != nil {
		return jobs.DuePage{}, fmt.Errorf("dynamo: due jobs: %w", err)
	}
	var page jobs.DuePage
	for _, it := range out.Items {
		page.JobIDs = append(page.JobIDs, strings.TrimPrefix(strOf(it[table.AttrPK]), "JOB#"))
	}
	if out.LastEvaluatedKey != nil {
		if page.Cursor, err = encodeKey(out.LastEvaluatedKey); err != nil {
			return page, err
		}
	}
	return page, nil
}

// defaultJobsPage is a listing's page when the caller names none (the
// engine always does).
const defaultJobsPage = 25

// List pages jobs newest first: by tenant (tenant-createdAt, the kind a
// filter), by kind (kind-createdAt), or across tenants by every kind of
// p.Kinds (their kind-createdAt partitions merged: listing.go); the
// status is a filter expression. A page makes at most ListReadBudget
// queries per partition, so a rare status answers a short page with a
// cursor.
func (s *Jobs) List(ctx context.Context, p jobs.ListParams) (jobs.Page, error) {
	if p.Limit <= 0 {
		p.Limit = defaultJobsPage
	}
	var f partFilter
	if p.TenantID != "" && p.Kind != "" {
		f.eq(table.AttrKind, p.Kind)
	}
	if p.Status != "" {
		f.eq(table.AttrStatus, string(p.Status))
	}
	part := func(name, index, pkAttr, pk string) listPart[jobs.Job] {
		ip := indexPart[jobs.Job]{
			client: s.Client, in: partQuery(s.Table, index, pkAttr, pk, table.AttrCreatedAt, "", "", f, nil),
			sortKey: table.AttrCreatedAt, tieKey: table.AttrPK,
			fixed:  map[string]ddbtypes.AttributeValue{table.AttrSK: str(jobSK), pkAttr: str(pk)},
			decode: decodeJobItem,
		}
		return listPart[jobs.Job]{name: name, read: ip.read}
	}
	var parts []listPart[jobs.Job]
	switch {
	case p.TenantID != "":
		parts = append(parts, part("t", table.IndexJobsTenant, table.AttrTenantID, p.TenantID))
	case p.Kind != "":
		parts = append(parts, part("k", table.IndexJobsKind, table.AttrKind, p.Kind))
	default:
		for _, k := range p.Kinds {
			parts = append(parts, part(k, table.IndexJobsKind, table.AttrKind, k))
		}
	}
	if len(parts) == 0 {
		return jobs.Page{Jobs: []jobs.Job{}}, nil
	}
	run, err := newListRun(parts, listOpts{
		newestFirst: true, cursor: p.Cursor, filter: fingerprint("jobs", p.TenantID, p.Kind, string(p.Status), strings.Join(p.Kinds, ",")),
		limit: readLimit(p.Limit, len(parts), f.any()), budget: len(parts) * ListReadBudget,
	})
	if err != nil {
		return jobs.Page{}, &jobs.RequestError{Code: jobs.CodeInvalidRequest, Message: "the cursor is not one this service returned (or continues another listing)"}
	}
	hits, err := run.take(ctx, p.Limit)
	if err != nil {
		return jobs.Page{}, fmt.Errorf("dynamo: list jobs: %w", err)
	}
	page := jobs.Page{Jobs: make([]jobs.Job, 0, len(hits))}
	for _, h := range hits {
		page.Jobs = append(page.Jobs, h.v)
	}
	page.Jobs = inOrder(run, page.Jobs)
	if page.Cursor, page.Prev, err = run.cursors(); err != nil {
		return page, err
	}
	return page, nil
}
