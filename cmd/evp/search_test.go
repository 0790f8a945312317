package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/identity"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// stripeEvent commits a Stripe event of a customer, its billing row
// enqueued, at created.
func (f *operatorFixture) stripeEvent(t *testing.T, id, typ, customer string, created time.Time) {
	t.Helper()
	ev := envelope.Event{SchemaVersion: 1, ID: id, TenantID: "acme", Type: typ, Source: "stripe",
		Timestamp: created, Payload: json.RawMessage(`{"customer":"` + customer + `"}`)}
	p := topology.Producer{Source: "stripe", Provider: "stripe"}
	rec := ledger.Record{Key: id, Event: ev, Topics: []string{topology.Billing}, PayloadHash: identity.Of(p, ev), Status: ledger.StatusReceived,
		OrderingKey: customer, CreatedAt: created, ExpiresAt: created.Add(14 * 24 * time.Hour)}
	row := outbox.Row{Key: id, EventID: id, Topic: topology.Billing, TenantID: "acme", Type: typ, Status: outbox.StatusEnqueued, MaxAttempts: 5,
		NextRetryAt: created, CreatedAt: created, UpdatedAt: created}
	require.NoError(t, f.events.Commit(context.Background(), ingest.CommitParams{Record: rec, Rows: []outbox.Row{row}}))
}

var cursorLine = regexp.MustCompile(`more: add --cursor (\S+) \(or --all\)`)

// `evp events list`: a page at a time (--limit, the cursor it prints),
// every page with --all, filtered by customer, type and status.
func TestEventsListPagesAndFilters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newOperatorFixture(t)
	var want []string // newest first
	for i := range 5 {
		id := fmt.Sprintf("evt_list_%d", i)
		typ := []string{"stripe.invoice.paid", "stripe.invoice.payment_failed"}[min(i%3, 1)]
		f.stripeEvent(t, id, typ, fmt.Sprintf("cus_%d", i%2), g0.Add(time.Duration(i)*time.Minute))
		want = append([]string{id}, want...)
	}
	f.consumed(t, "evt_list_3", "acme", topology.Billing, g0.Add(time.Hour), "")
	f.consumed(t, "evt_list_4", "acme", topology.Billing, g0.Add(time.Hour), "subscriber answered 422")
	ids := func(out string) []string {
		return regexp.MustCompile(`(?m)^(evt_list_\d)\s`).FindAllString(out, -1)
	}
	trim := func(xs []string) []string {
		for i := range xs {
			xs[i] = strings.TrimSpace(xs[i])
		}
		return xs
	}

	out, err := run(t, ctx, "", "events", "list", "--tenant", "acme", "--limit", "2", "--url", f.url)
	require.NoError(t, err, out)
	require.Equal(t, want[:2], trim(ids(out)))
	m := cursorLine.FindStringSubmatch(out)
	require.NotNil(t, m, out)
	out, err = run(t, ctx, "", "events", "list", "--tenant", "acme", "--limit", "2", "--cursor", m[1], "--url", f.url)
	require.NoError(t, err, out)
	require.Equal(t, want[2:4], trim(ids(out)), "the next page")

	out, err = run(t, ctx, "", "events", "list", "--tenant", "acme", "--limit", "2", "--all", "--url", f.url)
	require.NoError(t, err, out)
	require.Equal(t, want, trim(ids(out)), "every page")
	require.NotContains(t, out, "more:")
	require.Contains(t, out, "\n5 events\n")
	require.Regexp(t, `evt_list_4\s+stripe.invoice.payment_failed\s+stripe\s+dlq\s`, out)
	require.Regexp(t, `evt_list_3\s+stripe.invoice.paid\s+stripe\s+completed\s.*customer cus_1`, out)

	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--customer", "cus_0"}, []string{"evt_list_4", "evt_list_2", "evt_list_0"}},
		{[]string{"--type", "stripe.invoice.paid", "--limit", "1", "--all"}, []string{"evt_list_3", "evt_list_0"}},
		{[]string{"--status", "completed"}, []string{"evt_list_3"}},
		{[]string{"--status", "enqueued", "--customer", "cus_1"}, []string{"evt_list_1"}},
		{[]string{"--since", "2026-11-30T09:01:00Z", "--until", "2026-11-30T09:03:00Z"}, []string{"evt_list_2", "evt_list_1"}},
	} {
		args := append([]string{"events", "list", "--tenant", "acme", "--url", f.url}, c.args...)
		out, err := run(t, ctx, "", args...)
		require.NoError(t, err, out)
		require.Equal(t, c.want, trim(ids(out)), c.args)
	}

	out, err = run(t, ctx, "", "events", "list", "--tenant", "acme", "--limit", "2", "--all", "--json", "--url", f.url)
	require.NoError(t, err, out)
	var page operator.EventPage
	require.NoError(t, json.Unmarshal([]byte(out), &page))
	require.Len(t, page.Events, 5)
	require.Empty(t, page.Next)

	_, err = run(t, ctx, "", "events", "list", "--tenant", "acme", "--status", "lost", "--url", f.url)
	require.ErrorContains(t, err, `status "lost"`)
	_, err = run(t, ctx, "", "events", "list", "--tenant", "acme", "--cursor", "not-a-cursor", "--url", f.url)
	require.ErrorContains(t, err, "cursor")
}

// `evp dlq list` by event, error code and type, a page at a time or all.
func TestDLQListSearch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newOperatorFixture(t)
	a := f.incident(t, "evt_s1", "acme", "crm.sync", "subscriber_rejected", "CRM answered 422", g0)
	b := f.incident(t, "evt_s1", "acme", "notifications.events", "max_receives_exceeded", "SMTP timed out", g0.Add(time.Minute))
	c := f.incident(t, "evt_s2", "acme", "crm.sync", "subscriber_rejected", "CRM answered 422", g0.Add(2*time.Minute))
	incidents := func(out string) []string {
		return regexp.MustCompile(`inc_[0-9a-f]{32}`).FindAllString(out, -1)
	}

	out, err := run(t, ctx, "", "dlq", "list", "--event", "evt_s1", "--url", f.url)
	require.NoError(t, err, out)
	require.Equal(t, []string{b.ID, a.ID}, incidents(out), "an event's incidents, newest failure first")
	out, err = run(t, ctx, "", "dlq", "list", "--error-code", "subscriber_rejected", "--limit", "1", "--url", f.url)
	require.NoError(t, err, out)
	require.Equal(t, []string{c.ID}, incidents(out))
	require.Regexp(t, cursorLine, out)
	out, err = run(t, ctx, "", "dlq", "list", "--error-code", "subscriber_rejected", "--limit", "1", "--all", "--url", f.url)
	require.NoError(t, err, out)
	require.Equal(t, []string{c.ID, a.ID}, incidents(out))
	require.NotContains(t, out, "more:")
	out, err = run(t, ctx, "", "dlq", "list", "--type", "stripe.invoice.paid", "--url", f.url)
	require.NoError(t, err, out)
	require.Empty(t, incidents(out))
}

// `evp jobs list` names no tenant or kind: every tenant's jobs.
func TestJobsListAcrossTenants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newOperatorFixture(t)
	var started []string
	for _, tenant := range []string{"acme", "globex"} {
		out, err := run(t, ctx, "", "jobs", "start", "tenant-export", "--tenant", tenant, "--url", f.url)
		require.NoError(t, err, out)
		id := regexp.MustCompile(`job_[0-9a-f]{32}`).FindString(out)
		require.NotEmpty(t, id, out)
		started = append(started, id)
	}
	jobIDs := func(out string) []string { return regexp.MustCompile(`job_[0-9a-f]{32}`).FindAllString(out, -1) }
	// The fixture's clock stands still: both start at one instant, in no
	// particular order.
	out, err := run(t, ctx, "", "jobs", "list", "--url", f.url)
	require.NoError(t, err, out)
	require.ElementsMatch(t, started, jobIDs(out))
	out, err = run(t, ctx, "", "jobs", "list", "--status", "queued", "--limit", "1", "--url", f.url)
	require.NoError(t, err, out)
	require.Len(t, jobIDs(out), 1)
	require.Regexp(t, cursorLine, out)
	out, err = run(t, ctx, "", "jobs", "list", "--status", "queued", "--limit", "1", "--all", "--url", f.url)
	require.NoError(t, err, out)
	require.ElementsMatch(t, started, jobIDs(out))
	out, err = run(t, ctx, "", "jobs", "list", "--status", "failed", "--url", f.url)
	require.NoError(t, err, out)
	require.Equal(t, "no jobs\n", out)
}
