package dynamo

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/retention"
)

// RetentionExpiry is the retention expiry's store: it finds a tenant's items past a
// cutoff through the tenant indexes (oldest first, bounded by the key
// condition: nothing younger is read) and deletes them, each delete fenced
// by the step's lease.
type RetentionExpiry struct {
	Events    *Events
	Incidents *Incidents
	Fence     Fence
}

// OldEvents pages a tenant's events accepted before q.Before, oldest
// first (index summaries: key, topics; no payload), from every shard of
// the tenant-shard index and the legacy tenant index, merged.
func (p *RetentionExpiry) OldEvents(ctx context.Context, q retention.Query) ([]ledger.Record, string, error) {
	if q.Limit <= 0 {
		return nil, "", fmt.Errorf("dynamo: old events: limit %d must be positive", q.Limit)
	}
	_, untilLast := window(time.Time{}, q.Before)
	part := func(name, index, pkAttr, pk, sortKey string) listPart[ledger.Record] {
		ip := indexPart[ledger.Record]{
			client: p.Events.Client, in: partQuery(p.Events.Table, index, pkAttr, pk, sortKey, "", untilLast, partFilter{}, nil),
			sortKey: sortKey, tieKey: table.AttrPK,
			fixed:  map[string]ddbtypes.AttributeValue{table.AttrSK: str(ledgerSK), pkAttr: str(pk)},
			decode: decodeListedLedger,
		}
		return listPart[ledger.Record]{name: name, read: ip.read}
	}
	var parts []listPart[ledger.Record]
	for s := range table.TenantShards {
		parts = append(parts, part(strconv.Itoa(s), table.IndexTenantShard, table.AttrTenantPK, table.TenantShardPartition(q.TenantID, s), table.AttrTenantAt))
	}
	parts = append(parts, part("legacy", table.IndexTenant, table.AttrTenantID, q.TenantID, table.AttrTenantSK))
	run, err := newListRun(parts, listOpts{
		filter: fingerprint("old-events", q.TenantID, untilLast), cursor: q.Cursor,
		limit: readLimit(q.Limit, len(parts), false), budget: len(parts) * ListReadBudget,
	})
	if err != nil {
		return nil, "", fmt.Errorf("dynamo: old events: %w", err)
	}
	hits, err := run.take(ctx, q.Limit)
	if err != nil {
		return nil, "", fmt.Errorf("dynamo: old events of %s: %w", q.TenantID, err)
	}
	recs := make([]ledger.Record, len(hits))
	for i, h := range hits {
		recs[i] = h.v
	}
	next, _, err := run.cursors()
	return recs, next, err
}

// Record reads an event's whole ledger item.
func (p *RetentionExpiry) Record(ctx context.Context, key string) (ledger.Record, error) {
	return p.Events.Record(ctx, key)
}

// DeleteEvent deletes an event's ledger item and its outbox rows (one per
// topic) in one transaction, fenced. An event already gone is not an
// error.
func (p *RetentionExpiry) DeleteEvent(ctx context.Context, lease jobs.Lease, key string, topics []string) error {
	items := []ddbtypes.TransactWriteItem{p.Fence.Check(lease), {Delete: &ddbtypes.Delete{
		TableName: aws.String(p.Events.Table),
		Key:       map[string]ddbtypes.AttributeValue{table.AttrPK: str(EventPK(key)), table.AttrSK: str(ledgerSK)},
	}}}
	for _, t := range topics {
		items = append(items, ddbtypes.TransactWriteItem{Delete: &ddbtypes.Delete{
			TableName: aws.String(p.Events.Table),
			Key:       map[string]ddbtypes.AttributeValue{table.AttrPK: str(EventPK(key)), table.AttrSK: str(DispatchSK(t))},
		}})
	}
	_, err := p.Events.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if class, at := classify(err); err != nil && class == txConditionFailed && at == 0 {
		return ErrFenced
	}
	if err != nil {
		return fmt.Errorf("dynamo: delete event %s: %w", key, err)
	}
	return nil
}

// OldIncidents pages a tenant's resolved or ignored incidents whose last
// failure is before q.Before, oldest first (a resolution comes after the
// last failure, so every incident resolved before the cutoff is among
// them; the caller checks the resolution time).
func (p *RetentionExpiry) OldIncidents(ctx context.Context, q retention.Query) ([]incident.Incident, string, error) {
	in := &dynamodb.QueryInput{
		TableName:                aws.String(p.Incidents.Table),
		IndexName:                aws.String(table.IndexIncidentTenant),
		KeyConditionExpression:   aws.String("tenantId = :t AND lastFailedAt < :b"),
		FilterExpression:         aws.String("#s IN (:resolved, :ignored)"),
		ExpressionAttributeNames: map[string]string{"#s": table.AttrStatus},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":t": str(q.TenantID), ":b": str(FormatTime(q.Before)),
			":resolved": str(string(incident.StatusResolved)), ":ignored": str(string(incident.StatusIgnored)),
		},
		ScanIndexForward: aws.Bool(true),
		Limit:            aws.Int32(int32(q.Limit)),
	}
	if q.Cursor != "" {
		start, err := decodeKey(q.Cursor)
		if err != nil {
			return nil, "", fmt.Errorf("dynamo: old incidents: invalid cursor: %w", err)
		}
		in.ExclusiveStartKey = start
	}
	out, err := p.Incidents.Client.Query(ctx, in)
	if err != nil {
		return nil, "", fmt.Errorf("dynamo: old incidents of %s: %w", q.TenantID, err)
	}
	var incs []incident.Incident
	for _, item := range out.Items {
		inc, err := decodeIncident(item)
		if err != nil {
			return nil, "", err
		}
		incs = append(incs, inc)
	}
	next := ""
	if out.LastEvaluatedKey != nil {
		if next, err = encodeKey(out.LastEvaluatedKey); err != nil {
			return nil, "", err
		}
	}
	return incs, next, nil
}

// DeleteIncident deletes an incident, fenced and conditional on its
// version: one that changed since it was read (a new dead letter reopened
// it) is kept (ErrChanged). An incident already gone is not an error.
func (p *RetentionExpiry) DeleteIncident(ctx context.Context, lease jobs.Lease, inc incident.Incident) error {
	_, err := p.Incidents.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		p.Fence.Check(lease),
		{Delete: &ddbtypes.Delete{
			TableName:                 aws.String(p.Incidents.Table),
			Key:                       map[string]ddbtypes.AttributeValue{table.AttrIncidentID: str(inc.ID)},
			ConditionExpression:       aws.String("attribute_not_exists(incidentId) OR version = :v"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":v": num(int64(inc.Version))},
		}},
	}})
	if class, at := classify(err); err != nil && class == txConditionFailed {
		if at == 0 {
			return ErrFenced
		}
		return fmt.Errorf("dynamo: delete incident %s: %w", inc.ID, incident.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("dynamo: delete incident %s: %w", inc.ID, err)
	}
	return nil
}

// Holds fails unless the step still holds its lease (before S3 deletes,
// which cannot carry a condition).
func (p *RetentionExpiry) Holds(ctx context.Context, lease jobs.Lease) error {
	return (&Erasure{Events: p.Events, Fence: p.Fence}).Holds(ctx, lease)
}
