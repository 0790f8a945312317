package dynamo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/outboxsweep"
)

type tables struct {
	env       *awslocaltest.Env
	events    *dynamo.Events
	incidents *dynamo.Incidents
}

func setupTables(t *testing.T) tables {
	t.Helper()
	env := awslocaltest.NewEnv(t)
	return tables{
		env:       env,
		events:    env.Events(),
		incidents: env.Incidents(),
	}
}

// commit stores an event routed to topics whose rows are pending and
// unleased at created (as if the ingest call had died).
func commit(t *testing.T, e *dynamo.Events, id, tenant string, created time.Time, topics ...string) ledger.Record {
	t.Helper()
	rec := ledger.Record{
		Key: id,
		Event: envelope.Event{
			SchemaVersion: 1, ID: id, TenantID: tenant, Type: "stripe.invoice.paid", Source: "stripe",
			Timestamp: created, Payload: json.RawMessage(`{"amount":100}`),
		},
		Topics: topics, PayloadHash: "h", Status: ledger.StatusReceived, CreatedAt: created, ExpiresAt: created.Add(14 * 24 * time.Hour),
	}
	var rows []outbox.Row
	for _, tp := range topics {
		rows = append(rows, outbox.Row{
			Key: id, EventID: id, Topic: tp, TenantID: tenant, Type: rec.Event.Type, Status: outbox.StatusPending, MaxAttempts: 5,
			NextRetryAt: created, LeaseUntil: created, LeaseOwner: "ingest-" + id, CreatedAt: created, UpdatedAt: created,
		})
	}
	require.NoError(t, e.Commit(context.Background(), ingest.CommitParams{Record: rec, Rows: rows}))
	return rec
}

func row(t *testing.T, e *dynamo.Events, id, topic string) outbox.Row {
	t.Helper()
	_, rows, err := e.Load(context.Background(), id)
	require.NoError(t, err)
	for _, r := range rows {
		if r.Topic == topic {
			return r
		}
	}
	t.Fatalf("no row %s/%s", id, topic)
	return outbox.Row{}
}

func TestLedgersBatchGet(t *testing.T) {
	t.Parallel()
	tb := setupTables(t)
	ids := []string{}
	for i := range 3 {
		id := fmt.Sprintf("evt_b%d", i)
		commit(t, tb.events, id, "acme", t0, "billing.events")
		ids = append(ids, id)
	}
	got, err := tb.events.Ledgers(context.Background(), append(ids, "evt_missing", ids[0]))
	require.NoError(t, err)
	require.Len(t, got, 3)
	for _, id := range ids {
		require.Equal(t, id, got[id].Event.ID)
		require.JSONEq(t, `{"amount":100}`, string(got[id].Event.Payload))
	}
}

func TestDuePageCursorWalksAPartition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tb := setupTables(t)
	// Find five events sharing one shard of billing.events.
	var ids []string
	shard := -1
	for i := 0; len(ids) < 5; i++ {
		id := fmt.Sprintf("evt_d%03d", i)
		s := table.Shard(id, "billing.events")
		if shard < 0 {
			shard = s
		}
		if s == shard {
			commit(t, tb.events, id, "acme", t0.Add(time.Duration(len(ids))*time.Second), "billing.events")
			ids = append(ids, id)
		}
	}
	var got []string
	cursor := ""
	for range 10 {
		page, err := tb.events.DuePage(ctx, outboxsweep.DueParams{Shard: shard, Now: t0.Add(time.Hour), Limit: 2, Cursor: cursor})
		require.NoError(t, err)
		for _, r := range page.Rows {
			got = append(got, r.EventID)
		}
		if page.Cursor == "" {
			break
		}
		cursor = page.Cursor
	}
	require.Equal(t, ids, got, "oldest first, every row once")
}

func TestMarkDLQAndResetForReplay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tb := setupTables(t)
	commit(t, tb.events, "evt_m", "acme", t0, "billing.events")

	marked, err := tb.events.MarkDLQ(ctx, outbox.RowRef{Key: "evt_m", Topic: "billing.events"}, t0.Add(time.Minute))
	require.NoError(t, err)
	require.True(t, marked)
	r := row(t, tb.events, "evt_m", "billing.events")
	require.Equal(t, outbox.StatusDLQ, r.Status)
	require.Empty(t, r.LeaseOwner)

	marked, err = tb.events.MarkDLQ(ctx, outbox.RowRef{Key: "evt_missing", Topic: "billing.events"}, t0)
	require.NoError(t, err)
	require.False(t, marked, "a missing row is left alone")

	// Reset conditional on the row as seen.
	require.NoError(t, tb.events.ResetForReplay(ctx, r, t0.Add(2*time.Minute)))
	reset := row(t, tb.events, "evt_m", "billing.events")
	require.Equal(t, outbox.StatusEnqueued, reset.Status)
	require.Equal(t, r.Attempts, reset.Attempts)
	require.Equal(t, r.LastError, reset.LastError)
	// The same stale view cannot reset it again.
	require.ErrorIs(t, tb.events.ResetForReplay(ctx, r, t0.Add(3*time.Minute)), outbox.ErrRowChanged)
}

// Rule: a row never exists without its ledger item. Restoring an event
// past its retention writes both, expiring together; a second restore
// finds the row and changes nothing. The restore copies the incident's
// body into a ledger item, so it is guarded by the erasure (§5, guarantee
// 13): once the incident is erased, or the ledger item carries the
// marker, nothing is written (outbox.ErrErased).
func TestRestoreWritesTheLedgerWithTheRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tb := setupTables(t)
	rv := &dynamo.Recovery{Events: tb.events, Incidents: tb.incidents}
	ev := envelope.Event{SchemaVersion: 1, ID: "evt_gone", TenantID: "acme", Type: "stripe.invoice.paid", Source: "stripe", Timestamp: t0, Payload: json.RawMessage(`{"a":1}`)}
	rec := ledger.Record{Key: "evt_gone", Event: ev, Topics: []string{"billing.events"}, PayloadHash: "h", Status: ledger.StatusReceived, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	gone := outbox.Row{Key: "evt_gone", EventID: "evt_gone", Topic: "billing.events", TenantID: "acme", Type: ev.Type, Status: outbox.StatusEnqueued, MaxAttempts: 5, CreatedAt: t0, UpdatedAt: t0}
	inc := restorable(t, tb, gone)
	require.NoError(t, rv.Restore(ctx, rec, gone, false, inc.ID))
	got, rows, err := tb.events.Load(ctx, "evt_gone")
	require.NoError(t, err)
	require.Equal(t, "evt_gone", got.Event.ID)
	require.Len(t, rows, 1)
	require.Equal(t, outbox.StatusEnqueued, rows[0].Status)
	require.ErrorIs(t, rv.Restore(ctx, rec, gone, true, inc.ID), outbox.ErrRowChanged)

	// A row restored beside an existing ledger item only needs the item.
	other := gone
	other.Topic = "audit.events"
	require.NoError(t, rv.Restore(ctx, rec, other, true, restorable(t, tb, other).ID))
	missing := gone
	missing.Key, missing.EventID = "evt_nothing", "evt_nothing"
	missingRec := rec
	missingRec.Key = "evt_nothing"
	require.ErrorIs(t, rv.Restore(ctx, missingRec, missing, true, restorable(t, tb, missing).ID), outbox.ErrRowChanged, "no ledger item: no row")
	_, _, err = tb.events.Load(ctx, "evt_nothing")
	require.ErrorIs(t, err, ledger.ErrNotFound)

	// The incident erased after the replay read it: no ledger item, no row.
	erased := gone
	erased.Key, erased.EventID = "evt_erased_incident", "evt_erased_incident"
	erasedRec := rec
	erasedRec.Key, erasedRec.Event.ID = erased.Key, erased.EventID
	ei := restorable(t, tb, erased)
	_, err = tb.incidents.Save(ctx, ei.Erased(ledger.ErasedPayload))
	require.NoError(t, err)
	require.ErrorIs(t, rv.Restore(ctx, erasedRec, erased, false, ei.ID), outbox.ErrErased)
	_, _, err = tb.events.Load(ctx, erased.Key)
	require.ErrorIs(t, err, ledger.ErrNotFound, "nothing restored from an erased incident")

	// The ledger item carries the marker: no row beside it.
	marked := commit(t, tb.events, "evt_marked", "acme", t0, "billing.events")
	tb.env.EraseEvent(t, "evt_marked")
	audit := outbox.Row{Key: "evt_marked", EventID: "evt_marked", Topic: "audit.events", TenantID: "acme", Type: marked.Event.Type, Status: outbox.StatusEnqueued, MaxAttempts: 5, CreatedAt: t0, UpdatedAt: t0}
	require.ErrorIs(t, rv.Restore(ctx, marked, audit, true, restorable(t, tb, audit).ID), outbox.ErrErased)
	_, ok, err := tb.events.Row(ctx, audit.Ref())
	require.NoError(t, err)
	require.False(t, ok, "no row beside an erased ledger item")
}

// restorable opens the incident a replay of row restores from.
func restorable(t *testing.T, tb tables, row outbox.Row) incident.Incident {
	t.Helper()
	body := []byte(`{"a":1}`)
	inc, err := tb.incidents.Save(context.Background(), incident.Incident{
		ID: incident.ID(row.Key, row.Topic), EventID: row.EventID, EventKey: row.Key, TenantID: row.TenantID, Topic: row.Topic,
		SourceQueue: "dlq", ErrorCode: "subscriber_rejected", ErrorMessage: "422",
		Body:   incident.Body{Inline: body, Size: len(body), SHA256: envelope.SHA256Hex(body)},
		Status: incident.StatusRetrying, CreatedAt: t0, UpdatedAt: t0, LastFailedAt: t0,
	})
	require.NoError(t, err)
	return inc
}

func TestAbandonIsOneTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tb := setupTables(t)
	rec := commit(t, tb.events, "evt_a", "acme", t0, "billing.events")
	rv := &dynamo.Recovery{Events: tb.events, Incidents: tb.incidents}
	now := t0.Add(time.Hour)
	ok, err := tb.events.Claim(ctx, outbox.ClaimParams{Row: outbox.RowRef{Key: "evt_a", Topic: "billing.events"}, Owner: "sweeper-1", Now: now, Lease: time.Minute})
	require.NoError(t, err)
	require.True(t, ok)

	body, err := rec.Message("billing.events")
	require.NoError(t, err)
	dl := incident.DeadLetter{
		EventID: "evt_a", TenantID: "acme", Topic: "billing.events", Type: rec.Event.Type, Source: "stripe",
		SourceQueue: incident.SourceOutbox, ErrorCode: incident.CodeOutboxExhausted, ErrorMessage: incident.MessageOutboxExhausted,
		ErrorDetail: "sqs down", Body: incident.Body{Inline: body.Body, Size: len(body.Body), SHA256: envelope.SHA256Hex(body.Body)},
		By: incident.ActorSweeper,
	}
	f := outbox.Failure{Row: outbox.RowRef{Key: "evt_a", Topic: "billing.events"}, EventID: "evt_a", Owner: "sweeper-1", Attempts: 5, Err: "sqs down", Now: now}

	// A sweeper that lost the lease abandons nothing: no incident either.
	stale := f
	stale.Owner = "sweeper-2"
	_, err = rv.Abandon(ctx, stale, dl)
	require.ErrorIs(t, err, outbox.ErrLeaseLost)
	_, err = tb.incidents.Get(ctx, incident.ID("evt_a", "billing.events"))
	require.ErrorIs(t, err, incident.ErrNotFound)

	inc, err := rv.Abandon(ctx, f, dl)
	require.NoError(t, err)
	require.Equal(t, incident.StatusOpen, inc.Status)
	got, err := tb.incidents.Get(ctx, inc.ID)
	require.NoError(t, err)
	require.Equal(t, incident.MessageOutboxExhausted, got.ErrorMessage)
	require.Equal(t, body.Body, got.Body.Inline)
	r := row(t, tb.events, "evt_a", "billing.events")
	require.Equal(t, outbox.StatusDLQAbandoned, r.Status)
	require.Equal(t, 5, r.Attempts)
	require.Equal(t, "sqs down", r.LastError)
	require.Empty(t, r.LeaseOwner)
}

func TestListTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tb := setupTables(t)
	for i := range 5 {
		commit(t, tb.events, fmt.Sprintf("evt_t%d", i), "acme", t0.Add(time.Duration(i)*time.Minute), "billing.events")
	}
	commit(t, tb.events, "evt_other", "globex", t0, "billing.events")
	var ids []string
	cursor := ""
	for range 10 {
		recs, next, err := tb.events.ListTenant(ctx, operator.TenantQuery{TenantID: "acme", Since: time.Time{}, Until: time.Time{}, Limit: 2, Cursor: cursor})
		require.NoError(t, err)
		for _, r := range recs {
			ids = append(ids, r.Event.ID)
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	require.Equal(t, []string{"evt_t4", "evt_t3", "evt_t2", "evt_t1", "evt_t0"}, ids)

	recs, _, err := tb.events.ListTenant(ctx, operator.TenantQuery{TenantID: "acme", Since: t0.Add(time.Minute), Until: t0.Add(3 * time.Minute), Limit: 10, Cursor: ""})
	require.NoError(t, err)
	require.Len(t, recs, 2)
	require.Equal(t, "evt_t2", recs[0].Event.ID)
	require.Equal(t, "evt_t1", recs[1].Event.ID)
}
