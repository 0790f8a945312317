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
// given); the remaining criteria (status under a tenant, topic, event id,
// error code, type) are filter expressions. Pages are merged listings
// (listing.go): each partition is read lazily, at most ReadBudget queries
// each per page, so a filter that matches rarely costs a bounded read and
// answers a shorter page with a cursor; the cursor records where each
// partition stopped, so pages never skip or repeat an incident even while
// incidents change status between calls, and f.Cursor may be a page's
// Prev to go back.
func (s *Incidents) List(ctx context.Context, f incident.Filter) (incident.Page, error) {
	if err := f.Validate(); err != nil {
		return incident.Page{}, fmt.Errorf("dynamo: list incidents: %w", err)
	}
	var filter partFilter
	if f.TenantID != "" && f.Status != "" {
		filter.eq(table.AttrStatus, string(f.Status))
	}
	for _, c := range [][2]string{{"topic", f.Topic}, {"eventId", f.EventID}, {"errorCode", f.ErrorCode}, {"type", f.Type}} {
		if c[1] != "" {
			filter.eq(c[0], c[1])
		}
	}
	since, untilLast := window(f.Since, f.Until)
	var parts []listPart[incidentItem]
	for _, p := range s.partitions(f) {
		ip := indexPart[incidentItem]{
			client: s.Client, in: partQuery(s.Table, p.index, p.pkKey, p.pk, table.AttrLastFailedAt, since, untilLast, filter, listed),
			sortKey: table.AttrLastFailedAt, tieKey: table.AttrIncidentID,
			fixed: map[string]ddbtypes.AttributeValue{p.pkKey: str(p.pk)},
			decode: func(item map[string]ddbtypes.AttributeValue) (incidentItem, error) {
				var it incidentItem
				if err := attributevalue.UnmarshalMap(item, &it); err != nil {
					return it, fmt.Errorf("dynamo: decode incident: %w", err)
				}
				return it, nil
			},
		}
		parts = append(parts, listPart[incidentItem]{name: p.name, read: ip.read})
	}
	want := f.PageSize()
	run, err := newListRun(parts, listOpts{
		newestFirst: true, cursor: f.Cursor,
		filter: fingerprint("incidents", string(f.Status), f.TenantID, f.Topic, f.EventID, f.ErrorCode, f.Type, since, untilLast),
		limit:  readLimit(want, len(parts), filter.any()), budget: len(parts) * ReadBudget,
	})
	if err != nil {
		return incident.Page{}, fmt.Errorf("dynamo: list incidents: %w", err)
	}
	hits, err := run.take(ctx, want)
	if err != nil {
		return incident.Page{}, fmt.Errorf("dynamo: list incidents: %w", err)
	}
	page := incident.Page{Incidents: make([]incident.Incident, 0, len(hits))}
	for _, h := range hits {
		page.Incidents = append(page.Incidents, h.v.incident())
	}
	page.Incidents = inOrder(run, page.Incidents)
	if page.Cursor, page.Prev, err = run.cursors(); err != nil {
		return incident.Page{}, err
	}
	return page, nil
}

// ReadBudget is how many Query calls one List makes per partition at most.
const ReadBudget = ListReadBudget

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
