package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/kit/pagecursor"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/retention"
)

// stored is an event as a listing test commits it.
type stored struct {
	id, tenant, typ, subject, customer string
	at                                 time.Time
	status                             outbox.Status
}

// put commits s through the adapter (as ingest does), routed to one
// topic whose row is in s.status (pending when unset).
func put(t *testing.T, e *dynamo.Events, s stored) ledger.Record {
	t.Helper()
	if s.typ == "" {
		s.typ = "stripe.invoice.paid"
	}
	if s.status == "" {
		s.status = outbox.StatusPending
	}
	ev := testkit.Event(s.id, s.typ, "stripe", `{"amount":100}`)
	ev.TenantID, ev.Subject, ev.Timestamp = s.tenant, s.subject, s.at
	rec, rows := testkit.Stored(ev, []string{"billing.events"}, s.at, s.status)
	rec.OrderingKey = s.customer
	if rec.OrderingKey == "" {
		rec.OrderingKey = s.subject
	}
	require.NoError(t, e.Commit(context.Background(), ingest.CommitParams{Record: rec, Rows: rows}))
	return rec
}

// putLegacy writes a ledger item as releases before the tenant-shard
// index did: tenantSk, no tenantPk.
func putLegacy(t *testing.T, env *awslocaltest.Env, id, tenant string, at time.Time) {
	t.Helper()
	created := dynamo.FormatTime(at)
	_, err := env.DynamoDB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(env.Resources.EventsTable), Item: map[string]ddbtypes.AttributeValue{
		"pk": &ddbtypes.AttributeValueMemberS{Value: dynamo.EventPK(id)}, "sk": &ddbtypes.AttributeValueMemberS{Value: dynamo.LedgerSK},
		"eventId": &ddbtypes.AttributeValueMemberS{Value: id}, "tenantId": &ddbtypes.AttributeValueMemberS{Value: tenant},
		"tenantSk": &ddbtypes.AttributeValueMemberS{Value: created + "#" + id}, "createdAt": &ddbtypes.AttributeValueMemberS{Value: created},
		"type": &ddbtypes.AttributeValueMemberS{Value: "stripe.invoice.paid"}, "source": &ddbtypes.AttributeValueMemberS{Value: "stripe"},
		"timestamp": &ddbtypes.AttributeValueMemberS{Value: at.Format(time.RFC3339Nano)}, "status": &ddbtypes.AttributeValueMemberS{Value: "received"},
		"topics":      &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{&ddbtypes.AttributeValueMemberS{Value: "billing.events"}}},
		"payloadHash": &ddbtypes.AttributeValueMemberS{Value: "h"}, "expiresAt": &ddbtypes.AttributeValueMemberN{Value: fmt.Sprint(at.Add(14 * 24 * time.Hour).Unix())},
	}})
	require.NoError(t, err)
}

// indexCount counts the items of one index partition.
func indexCount(t *testing.T, env *awslocaltest.Env, index, pkAttr, pk string) int {
	t.Helper()
	n := 0
	p := dynamodb.NewQueryPaginator(env.DynamoDB, &dynamodb.QueryInput{
		TableName: aws.String(env.Resources.EventsTable), IndexName: aws.String(index),
		KeyConditionExpression:    aws.String("#p = :p"),
		ExpressionAttributeNames:  map[string]string{"#p": pkAttr},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": &ddbtypes.AttributeValueMemberS{Value: pk}},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		require.NoError(t, err)
		n += len(page.Items)
	}
	return n
}

// Issue 37 goal 3: one tenant's events spread over every shard of the
// tenant-shard index, and none enters the legacy index (partitioned by
// the tenant alone). Failed before: every event of the tenant was in one
// partition.
func TestOneTenantsEventsSpreadOverTheTenantShards(t *testing.T) {
	t.Parallel()
	tb := setupTables(t)
	const n = 160
	for i := range n {
		put(t, tb.events, stored{id: fmt.Sprintf("evt_spread_%03d", i), tenant: "acme", at: t0.Add(time.Duration(i) * time.Second)})
	}
	total, smallest := 0, n
	for s := range table.TenantShards {
		c := indexCount(t, tb.env, table.IndexTenantShard, table.AttrTenantPK, table.TenantShardPartition("acme", s))
		total += c
		smallest = min(smallest, c)
	}
	require.Equal(t, n, total, "every event is in the tenant-shard index")
	require.GreaterOrEqual(t, smallest, n/table.TenantShards/2, "each of the %d shards takes its share", table.TenantShards)
	require.Zero(t, indexCount(t, tb.env, table.IndexTenant, table.AttrTenantID, "acme"), "no new event enters the legacy tenant index")
}

func TestListTenantMergesShardsAndLegacyItemsPageByPage(t *testing.T) {
	t.Parallel()
	onEachEmulator(t, func(t *testing.T, newEnv func(t *testing.T) *awslocaltest.Env) {
		ctx := context.Background()
		env := newEnv(t)
		e := env.Events()
		base := testkit.Recent().Add(-time.Hour)
		var want []string // newest first
		for i := range 25 {
			id := fmt.Sprintf("evt_m%02d", i)
			at := base.Add(time.Duration(i) * time.Minute)
			if i%5 == 2 {
				putLegacy(t, env, id, "acme", at) // written before the upgrade
			} else {
				put(t, e, stored{id: id, tenant: "acme", at: at})
			}
			want = append([]string{id}, want...)
		}
		put(t, e, stored{id: "evt_globex", tenant: "globex", at: base})

		// Forward, 4 a page, then back from the last page.
		var pages [][]string
		var prevs []string
		cursor := ""
		for range 20 {
			page, err := e.SearchTenant(ctx, operator.TenantQuery{TenantID: "acme", Limit: 4, Cursor: cursor})
			require.NoError(t, err)
			var ids []string
			for _, l := range page.Events {
				ids = append(ids, l.Record.Event.ID)
				require.Equal(t, "acme", l.Record.Event.TenantID)
			}
			pages, prevs = append(pages, ids), append(prevs, page.Prev)
			if cursor = page.Next; cursor == "" {
				break
			}
		}
		require.Equal(t, want, slices.Concat(pages...), "every event once, newest first, across shards and the legacy index")
		require.Empty(t, prevs[0], "the first page has no previous page")
		for i := len(pages) - 1; i > 0; i-- {
			page, err := e.SearchTenant(ctx, operator.TenantQuery{TenantID: "acme", Limit: 4, Cursor: prevs[i]})
			require.NoError(t, err)
			var ids []string
			for _, l := range page.Events {
				ids = append(ids, l.Record.Event.ID)
			}
			require.Equal(t, pages[i-1], ids, "the page before page %d", i)
			if i == 1 {
				require.Empty(t, page.Prev, "back at the first page")
			} else {
				require.NotEmpty(t, page.Prev)
			}
			require.NotEmpty(t, page.Next)
		}

		// A window bounds every part; the export's listing is the same.
		recs, next, err := e.ListTenant(ctx, operator.TenantQuery{TenantID: "acme", Since: base.Add(5 * time.Minute), Until: base.Add(12 * time.Minute), Limit: 100})
		require.NoError(t, err)
		require.Empty(t, next)
		var ids []string
		for _, r := range recs {
			ids = append(ids, r.Event.ID)
		}
		require.Equal(t, want[13:20], ids)

		// The retention expiry reads oldest first, the legacy items too.
		purge := &dynamo.RetentionExpiry{Events: e}
		var old []string
		cursor = ""
		for range 20 {
			recs, next, err := purge.OldEvents(ctx, retention.Query{TenantID: "acme", Before: base.Add(10 * time.Minute), Limit: 3, Cursor: cursor})
			require.NoError(t, err)
			for _, r := range recs {
				old = append(old, r.Event.ID)
			}
			if cursor = next; cursor == "" {
				break
			}
		}
		slices.Reverse(want)
		require.Equal(t, want[:10], old)
	})
}

func TestSearchTenantFilters(t *testing.T) {
	t.Parallel()
	onEachEmulator(t, func(t *testing.T, newEnv func(t *testing.T) *awslocaltest.Env) {
		ctx := context.Background()
		env := newEnv(t)
		e := env.Events()
		base := testkit.Recent().Add(-time.Hour)
		all := []stored{
			{id: "evt_f0", typ: "stripe.invoice.paid", customer: "cus_a", status: outbox.StatusCompleted},
			{id: "evt_f1", typ: "stripe.invoice.payment_failed", customer: "cus_a", status: outbox.StatusDLQ},
			{id: "evt_f2", typ: "stripe.invoice.paid", customer: "cus_b", status: outbox.StatusCompleted},
			{id: "evt_f3", typ: "stripe.customer.updated", subject: "sub_9", customer: "cus_a"},
			{id: "evt_f4", typ: "stripe.invoice.paid", subject: "sub_9", status: outbox.StatusFailed},
			{id: "evt_f5", typ: "stripe.invoice.paid", customer: "cus_a", status: outbox.StatusCompleted},
		}
		for i, s := range all {
			s.tenant, s.at = "acme", base.Add(time.Duration(i)*time.Minute)
			put(t, e, s)
		}
		// Another tenant's events with the same customer and subject.
		put(t, e, stored{id: "evt_g0", tenant: "globex", customer: "cus_a", subject: "sub_9", at: base})
		putLegacy(t, env, "evt_old", "acme", base.Add(-time.Minute))

		search := func(q operator.TenantQuery) (ids, statuses []string) {
			q.TenantID = "acme"
			for range 50 {
				page, err := e.SearchTenant(ctx, q)
				require.NoError(t, err)
				for _, l := range page.Events {
					ids, statuses = append(ids, l.Record.Event.ID), append(statuses, l.Status)
				}
				if q.Cursor = page.Next; q.Cursor == "" {
					return ids, statuses
				}
			}
			t.Fatal("the search does not end")
			return nil, nil
		}
		for _, c := range []struct {
			q    operator.TenantQuery
			want []string
		}{
			{operator.TenantQuery{Limit: 10}, []string{"evt_f5", "evt_f4", "evt_f3", "evt_f2", "evt_f1", "evt_f0", "evt_old"}},
			{operator.TenantQuery{Type: "stripe.invoice.paid", Limit: 2}, []string{"evt_f5", "evt_f4", "evt_f2", "evt_f0", "evt_old"}},
			{operator.TenantQuery{Customer: "cus_a", Limit: 2}, []string{"evt_f5", "evt_f3", "evt_f1", "evt_f0"}},
			{operator.TenantQuery{Subject: "sub_9", Limit: 5}, []string{"evt_f4", "evt_f3"}},
			{operator.TenantQuery{Subject: "sub_9", Customer: "cus_a", Limit: 5}, []string{"evt_f3"}},
			{operator.TenantQuery{Customer: "cus_a", Type: "stripe.invoice.paid", Limit: 5}, []string{"evt_f5", "evt_f0"}},
			{operator.TenantQuery{Customer: "cus_a", Since: base.Add(time.Minute), Until: base.Add(4 * time.Minute), Limit: 5}, []string{"evt_f3", "evt_f1"}},
			{operator.TenantQuery{Status: "completed", Limit: 2}, []string{"evt_f5", "evt_f2", "evt_f0"}},
			{operator.TenantQuery{Status: "dlq", Limit: 5}, []string{"evt_f1"}},
			{operator.TenantQuery{Status: ledger.StatusReceived, Limit: 5}, []string{"evt_f3"}},
			{operator.TenantQuery{Status: operator.StatusExpired, Limit: 5}, []string{"evt_old"}}, // its rows are gone
			{operator.TenantQuery{Status: "completed", Customer: "cus_a", Limit: 1}, []string{"evt_f5", "evt_f0"}},
			{operator.TenantQuery{Customer: "cus_none", Limit: 5}, nil},
		} {
			t.Run(fmt.Sprintf("%+v", c.q), func(t *testing.T) {
				ids, statuses := search(c.q)
				require.Equal(t, c.want, ids)
				if c.q.Status != "" {
					for _, s := range statuses {
						require.Equal(t, c.q.Status, s)
					}
				}
			})
		}
		_, statuses := search(operator.TenantQuery{Limit: 10})
		require.Equal(t, []string{"completed", "failed", ledger.StatusReceived, "completed", "dlq", "completed", operator.StatusExpired}, statuses)

		// A cursor continues only the listing it came from.
		page, err := e.SearchTenant(ctx, operator.TenantQuery{TenantID: "acme", Type: "stripe.invoice.paid", Limit: 1})
		require.NoError(t, err)
		require.NotEmpty(t, page.Next)
		_, err = e.SearchTenant(ctx, operator.TenantQuery{TenantID: "acme", Limit: 1, Cursor: page.Next})
		require.True(t, errors.Is(err, pagecursor.ErrInvalid), "%v", err)
		_, err = e.SearchTenant(ctx, operator.TenantQuery{TenantID: "globex", Type: "stripe.invoice.paid", Limit: 1, Cursor: page.Next})
		require.True(t, errors.Is(err, pagecursor.ErrInvalid), "another tenant: %v", err)
	})
}
