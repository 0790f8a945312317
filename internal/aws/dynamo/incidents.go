package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/siteswarm/eventplatform/internal/kit/pagecursor"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/incident"
)

// Incidents is the Incidents table adapter: one item per (event, topic)
// incident, written whole under optimistic concurrency (a version
// attribute), listed through the status-lastFailedAt and
// tenant-lastFailedAt indexes.
type Incidents struct {
	Client *dynamodb.Client
	Table  string
}

var _ incident.Store = (*Incidents)(nil)

// Get reads one incident with a strongly consistent read.
func (s *Incidents) Get(ctx context.Context, id string) (incident.Incident, error) {
	out, err := s.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.Table),
		Key:            map[string]ddbtypes.AttributeValue{table.AttrIncidentID: str(id)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return incident.Incident{}, fmt.Errorf("dynamo: get incident %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return incident.Incident{}, fmt.Errorf("dynamo: incident %s: %w", id, incident.ErrNotFound)
	}
	return decodeIncident(out.Item)
}

// Save writes the whole incident, conditional on the stored version being
// inc.Version (or on the incident not existing when it is 0).
func (s *Incidents) Save(ctx context.Context, inc incident.Incident) (incident.Incident, error) {
	put, err := s.put(inc)
	if err != nil {
		return incident.Incident{}, err
	}
	_, err = s.Client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: put.TableName, Item: put.Item,
		ConditionExpression:       put.ConditionExpression,
		ExpressionAttributeValues: put.ExpressionAttributeValues,
	})
	var ccf *ddbtypes.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return incident.Incident{}, fmt.Errorf("dynamo: save incident %s: %w", inc.ID, incident.ErrConflict)
	}
	if err != nil {
		return incident.Incident{}, fmt.Errorf("dynamo: save incident %s: %w", inc.ID, err)
	}
	inc.Version++
	return inc, nil
}

// put is the conditional Put of a Save, also used inside transactions.
func (s *Incidents) put(inc incident.Incident) (*ddbtypes.Put, error) {
	if inc.ID == "" || inc.TenantID == "" || inc.CreatedAt.IsZero() || !inc.Status.Valid() {
		return nil, fmt.Errorf("dynamo: incident %q is incomplete (id, tenant, createdAt and a valid status are required)", inc.ID)
	}
	next := inc
	next.Version++
	item, err := attributevalue.MarshalMap(toIncidentItem(next))
	if err != nil {
		return nil, fmt.Errorf("dynamo: marshal incident %s: %w", inc.ID, err)
	}
	p := &ddbtypes.Put{TableName: aws.String(s.Table), Item: item}
	if inc.Version == 0 {
		p.ConditionExpression = aws.String("attribute_not_exists(incidentId)")
	} else {
		p.ConditionExpression = aws.String("version = :v")
		p.ExpressionAttributeValues = map[string]ddbtypes.AttributeValue{":v": num(int64(inc.Version))}
	}
	return p, nil
}

// ResolveReplay marks a retrying incident resolved (resolvedBy "replay"); it
// is a no-op for an incident in any other status or an unknown id. It is the
// consumer runtime's replay attestation.
func (s *Incidents) ResolveReplay(ctx context.Context, incidentID string, at time.Time) error {
	return incident.ResolveReplay(ctx, s, incidentID, at)
}

// listed are the attributes a listing returns: everything but the inline
// body, the error detail and the history, which can be large.
var listed = []string{
	"incidentId", "eventId", "tenantId", "topic", "type", "source", "sourceQueue", "errorCode", "errorMessage",
	"eventKey", "subject", "owner", "retryCount", "replayCount", "replayToken", "bodyBucket", "bodyKey", "bodySize", "bodySha256", "payloadKey", "raw", "status",
	"replayedAt", "resolvedAt", "resolvedBy", "createdAt", "updatedAt", "lastFailedAt", "version",
}

// List returns a page of incidents matching f, newest failure first. It
// queries the tenant index when a tenant is given, else the status index
// (every status partition, merged by lastFailedAt, when no status is
// given); the remaining criteria are filter expressions. Each partition is
// read in pages of up to 1 MB and at most ReadBudget Query calls per List,
// so a sparse filter costs a bounded number of reads and returns a shorter
// page with a cursor instead of one Query per match. The cursor records,
// per partition, where reading stopped, so pages never skip or repeat
// items even while incidents change status between calls.
func (s *Incidents) List(ctx context.Context, f incident.Filter) (incident.Page, error) {
	if err := f.Validate(); err != nil {
		return incident.Page{}, fmt.Errorf("dynamo: list incidents: %w", err)
	}
	cur, err := decodeCursor(f.Cursor)
	if err != nil {
		return incident.Page{}, fmt.Errorf("dynamo: list incidents: %w", err)
	}
	parts := s.partitions(f)
	want := f.PageSize()

	results := make([]fetched, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		pc := cur[p.name]
		if pc.Done {
			continue
		}
		wg.Go(func() { results[i] = s.fetch(ctx, f, p, pc, want) })
	}
	wg.Wait()
	for _, r := range results {
		if r.err != nil {
			return incident.Page{}, r.err
		}
	}

	// Merge the partitions' sorted streams, newest first. A partition
	// that stopped on its read budget bounds the merge: nothing older than
	// where it stopped may be returned yet, or a later page could hold an
	// incident newer than one already returned.
	var floor *partCursor
	for i, r := range results {
		if !cur[parts[i].name].Done && r.stopped != nil && (floor == nil || newerPos(*r.stopped, *floor)) {
			floor = r.stopped
		}
	}
	heads := make([]int, len(parts))
	var page incident.Page
	for len(page.Incidents) < want {
		best := -1
		for i, r := range results {
			if heads[i] >= len(r.items) {
				continue
			}
			if best < 0 || newer(r.items[heads[i]], results[best].items[heads[best]]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		it := results[best].items[heads[best]]
		if floor != nil && !newerPos(posOf(it), *floor) {
			break
		}
		heads[best]++
		page.Incidents = append(page.Incidents, it.incident())
	}

	next := map[string]partCursor{}
	open := false
	for i, p := range parts {
		r := results[i]
		pc := cur[p.name]
		switch {
		case pc.Done:
		case heads[i] < len(r.items):
			// Items were read but not returned: continue after the last
			// returned one (or where this page started).
			if heads[i] > 0 {
				pc = posOf(r.items[heads[i]-1])
			}
		case r.stopped != nil:
			pc = *r.stopped
		default:
			pc = partCursor{Done: true}
		}
		next[p.name] = pc
		open = open || !pc.Done
	}
	if open {
		if page.Cursor, err = encodeCursor(next); err != nil {
			return incident.Page{}, err
		}
	}
	return page, nil
}

// ReadBudget is how many Query calls one List makes per partition at most.
const ReadBudget = 4

// fetched is one partition's reading for a page.
type fetched struct {
	items []incidentItem
	// stopped is where reading stopped with more left to read (the last
	// key evaluated); nil when the partition is exhausted.
	stopped *partCursor
	err     error
}

func newer(a, b incidentItem) bool { return newerPos(posOf(a), posOf(b)) }

func posOf(it incidentItem) partCursor {
	return partCursor{ID: it.IncidentID, LastFailedAt: it.LastFailedAt}
}

// newerPos orders positions as the index does, newest first.
func newerPos(a, b partCursor) bool {
	if a.LastFailedAt != b.LastFailedAt {
		return a.LastFailedAt > b.LastFailedAt
	}
	return a.ID > b.ID
}

// partition is one index partition a listing reads.
type partition struct {
	name  string // cursor key
	index string
	pkKey string
	pk    string
}

func (s *Incidents) partitions(f incident.Filter) []partition {
	if f.TenantID != "" {
		return []partition{{name: "t", index: table.IndexIncidentTenant, pkKey: table.AttrTenantID, pk: f.TenantID}}
	}
	statuses := incident.Statuses
	if f.Status != "" {
		statuses = []incident.Status{f.Status}
	}
	parts := make([]partition, len(statuses))
	for i, st := range statuses {
		parts[i] = partition{name: string(st), index: table.IndexIncidentStatus, pkKey: table.AttrStatus, pk: string(st)}
	}
	return parts
}

// fetch reads up to want matching items of one partition after pc, in at
// most ReadBudget queries.
func (s *Incidents) fetch(ctx context.Context, f incident.Filter, p partition, pc partCursor, want int) fetched {
	names := map[string]string{"#pk": p.pkKey}
	values := map[string]ddbtypes.AttributeValue{":pk": str(p.pk)}
	key := "#pk = :pk"
	switch {
	case !f.Since.IsZero() && !f.Until.IsZero():
		key += " AND #c BETWEEN :since AND :until"
		values[":since"], values[":until"] = str(FormatTime(f.Since)), str(FormatTime(f.Until.Add(-time.Millisecond)))
	case !f.Since.IsZero():
		key += " AND #c >= :since"
		values[":since"] = str(FormatTime(f.Since))
	case !f.Until.IsZero():
		key += " AND #c < :until"
		values[":until"] = str(FormatTime(f.Until))
	}
	if !f.Since.IsZero() || !f.Until.IsZero() {
		names["#c"] = table.AttrLastFailedAt
	}
	var filters []string
	if f.TenantID != "" && f.Status != "" {
		names["#s"] = table.AttrStatus
		values[":s"] = str(string(f.Status))
		filters = append(filters, "#s = :s")
	}
	if f.Topic != "" {
		names["#t"] = "topic"
		values[":t"] = str(f.Topic)
		filters = append(filters, "#t = :t")
	}
	proj := make([]string, len(listed))
	for i, a := range listed {
		ph := "#p" + strconv.Itoa(i)
		names[ph] = a
		proj[i] = ph
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.Table),
		IndexName:                 aws.String(p.index),
		KeyConditionExpression:    aws.String(key),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		ProjectionExpression:      aws.String(strings.Join(proj, ", ")),
		ScanIndexForward:          aws.Bool(false),
	}
	if len(filters) > 0 {
		// Limit counts items read, not matches: with a filter, read whole
		// 1 MB pages (bounded by the budget) instead of a few items a call.
		in.FilterExpression = aws.String(strings.Join(filters, " AND "))
	} else {
		in.Limit = aws.Int32(int32(want))
	}
	if pc.ID != "" {
		in.ExclusiveStartKey = map[string]ddbtypes.AttributeValue{
			table.AttrIncidentID: str(pc.ID), p.pkKey: str(p.pk), table.AttrLastFailedAt: str(pc.LastFailedAt),
		}
	}
	var out fetched
	for q := 1; ; q++ {
		res, err := s.Client.Query(ctx, in)
		if err != nil {
			out.err = fmt.Errorf("dynamo: list incidents (%s %s): %w", p.index, p.pk, err)
			return out
		}
		for _, raw := range res.Items {
			var it incidentItem
			if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
				out.err = fmt.Errorf("dynamo: decode incident: %w", err)
				return out
			}
			out.items = append(out.items, it)
		}
		if res.LastEvaluatedKey == nil {
			return out
		}
		if len(out.items) >= want || q >= ReadBudget {
			var last struct {
				ID           string `dynamodbav:"incidentId"`
				LastFailedAt string `dynamodbav:"lastFailedAt"`
			}
			if err := attributevalue.UnmarshalMap(res.LastEvaluatedKey, &last); err != nil {
				out.err = fmt.Errorf("dynamo: decode list position: %w", err)
				return out
			}
			out.stopped = &partCursor{ID: last.ID, LastFailedAt: last.LastFailedAt}
			return out
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

// partCursor is the position of one partition in a listing.
type partCursor struct {
	ID           string `json:"i,omitempty"`
	LastFailedAt string `json:"f,omitempty"`
	Done         bool   `json:"d,omitempty"`
}

func decodeCursor(s string) (map[string]partCursor, error) {
	out := map[string]partCursor{}
	if s == "" {
		return out, nil
	}
	if err := pagecursor.Decode(s, &out); err != nil {
		return nil, fmt.Errorf("invalid cursor: %w", err)
	}
	return out, nil
}

func encodeCursor(m map[string]partCursor) (string, error) { return pagecursor.Encode(m) }
