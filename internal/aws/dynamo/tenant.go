package dynamo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// A tenant's events are listed from the tenant-shard index: every shard
// of the tenant (table.TenantShards partitions) and the legacy tenant
// index (items written before the shards) are queried and merged newest
// first (listing.go). A type filter is a filter expression on those
// queries (the type is projected); a subject or a Stripe customer is
// looked up in the subject identifier indexes instead (keys only, under
// the tenant), which read only that subject's events however many the
// tenant has; a status is derived from each candidate's outbox rows
// (ledger.Summarize), read in one BatchGetItem per batch of candidates.
// docs/operations.md "Finding events" prices each.

// Limits of a search page.
const (
	// MaxSubjectEvents bounds the events of one subject or customer a
	// search reads through the subject identifier indexes (every one of
	// them is read to order them by time); one with more is searched
	// through the tenant-shard index with a filter instead.
	MaxSubjectEvents = 500
	// statusExamined is how many events a status filter examines per
	// page, at least (statusExaminedPerItem times the page otherwise).
	statusExamined        = 200
	statusExaminedPerItem = 5
	// filteredReadLimit is how many index items one query evaluates when
	// a filter expression may drop most of them.
	filteredReadLimit = 200
)

// ListTenant returns a page of a tenant's events newest first, accepted
// in [q.Since, q.Until) (zero: unbounded) and matching q's filters, as
// index summaries (no payload, no payload hash); next continues the
// listing and is "" when there is no more.
func (e *Events) ListTenant(ctx context.Context, q operator.TenantQuery) (records []ledger.Record, next string, err error) {
	page, err := e.search(ctx, q, false)
	if err != nil {
		return nil, "", err
	}
	for _, l := range page.Events {
		records = append(records, l.Record)
	}
	return records, page.Next, nil
}

// SearchTenant is ListTenant with each event's status (and the status
// filter), and a cursor to the previous page.
func (e *Events) SearchTenant(ctx context.Context, q operator.TenantQuery) (operator.TenantPage, error) {
	return e.search(ctx, q, true)
}

func (e *Events) search(ctx context.Context, q operator.TenantQuery, withStatus bool) (operator.TenantPage, error) {
	if q.TenantID == "" {
		return operator.TenantPage{}, errors.New("dynamo: list events: a tenant is required")
	}
	if q.Limit <= 0 {
		return operator.TenantPage{}, fmt.Errorf("dynamo: list events: limit %d must be positive", q.Limit)
	}
	parts, filtered, err := e.eventParts(ctx, q)
	if err != nil {
		return operator.TenantPage{}, err
	}
	filter := fingerprint("events", q.TenantID, stamp(q.Since), stamp(q.Until), q.Type, q.Subject, q.Customer, q.Status)
	run, err := newListRun(parts, listOpts{
		newestFirst: true, filter: filter, cursor: q.Cursor,
		limit: readLimit(q.Limit, len(parts), filtered), budget: len(parts) * ListReadBudget,
	})
	if err != nil {
		return operator.TenantPage{}, fmt.Errorf("dynamo: list events: %w", err)
	}
	var out []operator.Listed
	examined := 0
	for len(out) < q.Limit {
		// Take only as many as the page still needs, so the cursor is
		// right after the last one examined.
		batch, err := run.take(ctx, q.Limit-len(out))
		if err != nil {
			return operator.TenantPage{}, fmt.Errorf("dynamo: list events of %s: %w", q.TenantID, err)
		}
		if len(batch) == 0 {
			break
		}
		recs := make([]ledger.Record, len(batch))
		for i, h := range batch {
			recs[i] = h.v
		}
		var statuses []string
		if withStatus || q.Status != "" {
			if statuses, err = e.statuses(ctx, recs); err != nil {
				return operator.TenantPage{}, err
			}
		}
		for i, rec := range recs {
			l := operator.Listed{Record: rec}
			if statuses != nil {
				l.Status = statuses[i]
			}
			if q.Status == "" || l.Status == q.Status {
				out = append(out, l)
			}
		}
		if examined += len(batch); q.Status != "" && examined >= max(statusExamined, statusExaminedPerItem*q.Limit) {
			break
		}
	}
	page := operator.TenantPage{Events: inOrder(run, out)}
	if page.Next, page.Prev, err = run.cursors(); err != nil {
		return operator.TenantPage{}, err
	}
	return page, nil
}

// readLimit is how many items one query of a part evaluates: a page's
// share of the parts (plus one, so a part rarely needs a second read),
// more when a filter may drop most of what is read.
func readLimit(page, parts int, filtered bool) int32 {
	n := page
	if parts > 1 {
		n = int(math.Ceil(float64(page)/float64(parts))) + 1
	}
	if filtered {
		n = max(n, filteredReadLimit)
	}
	return int32(n)
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return FormatTime(t)
}

// eventParts are the partitions a search reads; filtered says a filter
// may drop most of what they read.
func (e *Events) eventParts(ctx context.Context, q operator.TenantQuery) ([]listPart[ledger.Record], bool, error) {
	if q.Subject != "" || q.Customer != "" {
		recs, err := e.subjectEvents(ctx, q)
		switch {
		case errors.Is(err, errTooManySubjectEvents):
			// Searched through the shards with a filter below.
		case err != nil:
			return nil, false, err
		default:
			return []listPart[ledger.Record]{memPart("subject", recs)}, false, nil
		}
	}
	var f partFilter
	if q.Type != "" {
		f.eq("type", q.Type)
	}
	if q.Subject != "" {
		f.eq(table.AttrSubject, q.Subject)
	}
	if q.Customer != "" {
		f.eq(table.AttrOrderingKey, q.Customer)
	}
	since, untilLast := window(q.Since, q.Until)
	part := func(name, index, pkAttr, pk, sortKey string) listPart[ledger.Record] {
		ip := indexPart[ledger.Record]{
			client: e.Client, in: partQuery(e.Table, index, pkAttr, pk, sortKey, since, untilLast, f, nil),
			sortKey: sortKey, tieKey: table.AttrPK,
			fixed:  map[string]ddbtypes.AttributeValue{table.AttrSK: str(ledgerSK), pkAttr: str(pk)},
			decode: decodeListedLedger,
		}
		return listPart[ledger.Record]{name: name, read: ip.read}
	}
	parts := make([]listPart[ledger.Record], 0, table.TenantShards+1)
	for s := range table.TenantShards {
		parts = append(parts, part(strconv.Itoa(s), table.IndexTenantShard, table.AttrTenantPK, table.TenantShardPartition(q.TenantID, s), table.AttrTenantAt))
	}
	// The legacy index does not project the ordering key: a customer
	// searched through the shards (more than MaxSubjectEvents) finds
	// only events accepted since the tenant-shard index.
	if q.Customer == "" {
		parts = append(parts, part("legacy", table.IndexTenant, table.AttrTenantID, q.TenantID, table.AttrTenantSK))
	}
	return parts, f.any(), nil
}

func decodeListedLedger(item map[string]ddbtypes.AttributeValue) (ledger.Record, error) {
	var it ledgerItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return ledger.Record{}, fmt.Errorf("dynamo: decode ledger: %w", err)
	}
	return it.record(), nil
}

var errTooManySubjectEvents = errors.New("more events than MaxSubjectEvents")

// listedAttrs are what a subject search reads of each ledger item: what
// the tenant-shard index projects.
var listedAttrs = []string{
	table.AttrPK, table.AttrSK, table.AttrTenantID, table.AttrTenantPK, table.AttrTenantAt, table.AttrTenantSK,
	"eventId", "type", "source", "topics", "status", "createdAt", "timestamp", table.AttrSubject, table.AttrOrderingKey, table.AttrExpiresAt,
}

// subjectEvents are the tenant's events naming q.Subject (else
// q.Customer) from the subject identifier index, read eventually
// consistent and filtered by q's other criteria;
// errTooManySubjectEvents when there are more than MaxSubjectEvents.
func (e *Events) subjectEvents(ctx context.Context, q operator.TenantQuery) ([]hit[ledger.Record], error) {
	index, attr, value := table.IndexSubject, table.AttrSubject, q.Subject
	if value == "" {
		index, attr, value = table.IndexOwner, table.AttrOrderingKey, q.Customer
	}
	in := &dynamodb.QueryInput{
		TableName: aws.String(e.Table), IndexName: aws.String(index),
		KeyConditionExpression:    aws.String("#a = :v AND tenantId = :t"),
		ExpressionAttributeNames:  map[string]string{"#a": attr},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":v": str(value), ":t": str(q.TenantID)},
	}
	var keys []map[string]ddbtypes.AttributeValue
	for p := dynamodb.NewQueryPaginator(e.Client, in); p.HasMorePages(); {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("dynamo: events of %s %s: %w", attr, value, err)
		}
		for _, it := range page.Items {
			if sattr(it, table.AttrSK) == ledgerSK {
				keys = append(keys, map[string]ddbtypes.AttributeValue{table.AttrPK: it[table.AttrPK], table.AttrSK: it[table.AttrSK]})
			}
		}
		if len(keys) > MaxSubjectEvents {
			return nil, errTooManySubjectEvents
		}
	}
	names := map[string]string{}
	proj := make([]string, len(listedAttrs))
	for i, a := range listedAttrs {
		ph := "#p" + strconv.Itoa(i)
		names[ph], proj[i] = a, ph
	}
	how := ddbtypes.KeysAndAttributes{ProjectionExpression: aws.String(strings.Join(proj, ", ")), ExpressionAttributeNames: names}
	var out []hit[ledger.Record]
	err := e.batchGetWith(ctx, keys, how, func(item map[string]ddbtypes.AttributeValue) error {
		var it ledgerItem
		if err := attributevalue.UnmarshalMap(item, &it); err != nil {
			return fmt.Errorf("dynamo: decode ledger: %w", err)
		}
		rec := it.record()
		switch {
		case q.Type != "" && rec.Event.Type != q.Type,
			q.Subject != "" && rec.Event.Subject != q.Subject,
			q.Customer != "" && rec.OrderingKey != q.Customer,
			!q.Since.IsZero() && rec.CreatedAt.Before(q.Since),
			!q.Until.IsZero() && !rec.CreatedAt.Before(q.Until):
			return nil
		}
		out = append(out, hit[ledger.Record]{at: pos{Sort: it.sortValue(), Tie: it.PK}, v: rec})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dynamo: read the events of %s %s: %w", attr, value, err)
	}
	return out, nil
}

// memPart is a part over items already read, in any order.
func memPart[T any](name string, items []hit[T]) listPart[T] {
	sort.Slice(items, func(i, j int) bool { return items[i].at.before(items[j].at, false) })
	return listPart[T]{name: name, read: func(_ context.Context, from *pos, limit int32, desc bool) ([]hit[T], *pos, error) {
		n := int(limit)
		var got []hit[T]
		if desc {
			// The items before from, last first.
			j := len(items)
			if from != nil {
				j = sort.Search(len(items), func(i int) bool { return !items[i].at.before(*from, false) })
			}
			for i := j - 1; i >= 0 && len(got) < n; i-- {
				got = append(got, items[i])
			}
			if len(got) == n && j-n > 0 {
				return got, &got[n-1].at, nil
			}
			return got, nil, nil
		}
		i := 0
		if from != nil {
			i = sort.Search(len(items), func(k int) bool { return from.before(items[k].at, false) })
		}
		end := min(i+n, len(items))
		got = append(got, items[i:end]...)
		if end < len(items) {
			return got, &got[len(got)-1].at, nil
		}
		return got, nil, nil
	}}
}

// statuses are recs' statuses derived from their outbox rows (one
// eventually consistent BatchGetItem per 100 rows, and the receipts of
// batch-sent rows): StatusExpired for an event whose rows are gone.
func (e *Events) statuses(ctx context.Context, recs []ledger.Record) ([]string, error) {
	var keys []map[string]ddbtypes.AttributeValue
	for _, rec := range recs {
		for _, t := range rec.Topics {
			keys = append(keys, rowKey(outbox.RowRef{Key: rec.Key, Topic: t}))
		}
	}
	var rows []outbox.Row
	err := e.batchGetWith(ctx, keys, ddbtypes.KeysAndAttributes{ConsistentRead: aws.Bool(false)}, func(item map[string]ddbtypes.AttributeValue) error {
		var it rowItem
		if err := attributevalue.UnmarshalMap(item, &it); err != nil {
			return fmt.Errorf("dynamo: decode row: %w", err)
		}
		rows = append(rows, it.row())
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dynamo: read the rows of %d events: %w", len(recs), err)
	}
	if err := e.readReceiptsBatch(ctx, rows); err != nil {
		return nil, err
	}
	byKey := map[string][]outbox.Row{}
	for _, r := range rows {
		byKey[r.Key] = append(byKey[r.Key], r)
	}
	out := make([]string, len(recs))
	for i, rec := range recs {
		rs := byKey[rec.Key]
		if len(rec.Topics) > 0 && len(rs) == 0 {
			out[i] = operator.StatusExpired
			continue
		}
		out[i] = ledger.Summarize(rs)
	}
	return out, nil
}
