package devstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/local/devstack/devstacktest"
	"github.com/siteswarm/eventplatform/internal/retention"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
)

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// stripeEvent is the invoice.paid fixture under another id, created now.
func stripeEvent(t *testing.T, id string) []byte {
	t.Helper()
	raw, err := os.ReadFile("../../../events/stripe/invoice.paid.json")
	require.NoError(t, err)
	var ev map[string]any
	require.NoError(t, json.Unmarshal(raw, &ev))
	ev["id"], ev["created"] = id, time.Now().Unix()
	return mustJSON(t, ev)
}

// The reconciliation path of the local stack end to end: of two events in
// the Stripe API stand-in, the webhook delivered one; a stripe-reconcile
// job started through the admin API publishes the other through ingest
// (delivered to billing) and acknowledges the first as a duplicate; the
// job is completed with those counts, and a second start with the same
// date is the same job.
func TestReconcileJobThroughTheLocalStack(t *testing.T) {
	t.Parallel()
	st := startStack(t)
	require.NotNil(t, st.StripeEvents)
	delivered, missed := stripeEvent(t, "evt_local_delivered_1"), stripeEvent(t, "evt_local_missed_1")

	req, err := http.NewRequest(http.MethodPost, st.URL()+devstack.StripeWebhookPath, bytes.NewReader(delivered))
	require.NoError(t, err)
	req.Header.Set(stripe.SignatureHeader, stripe.Sign(delivered, time.Now(), devstack.DefaultStripeSecret))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	for _, ev := range [][]byte{delivered, missed} {
		resp, err := http.Post(st.URL()+devstack.StripeAPIPath+"/v1/events", "application/json", bytes.NewReader(ev))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusCreated, resp.StatusCode)
	}
	resp, err = http.Post(st.URL()+devstack.StripeAPIPath+"/v1/events", "application/json", bytes.NewReader([]byte(`{"id":"evt_x"}`)))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "an event without type and created is refused")

	today := time.Now().UTC().Format(time.DateOnly)
	start := map[string]any{"kind": "stripe-reconcile", "tenantId": "platform", "idempotencyKey": today, "args": map[string]any{"date": today, "lookbackDays": 1}}
	status, started := devstacktest.AdminDo(t, st, http.MethodPost, "/admin/jobs", start)
	require.Contains(t, []int{http.StatusAccepted, http.StatusCreated}, status, started)
	id, _ := started["jobId"].(string)
	require.NotEmpty(t, id, started)

	var job map[string]any
	require.Eventually(t, func() bool {
		_, job = devstacktest.AdminDo(t, st, http.MethodGet, "/admin/jobs/"+id, nil)
		return job["status"] == "completed" || job["status"] == "failed"
	}, 30*time.Second, 100*time.Millisecond, "job %v", &job)
	require.Equal(t, "completed", job["status"], job)
	require.Equal(t, map[string]any{"published": 1.0, "duplicates": 1.0, "unrouted": 0.0, "skipped": 0.0}, job["result"])

	require.Eventually(t, func() bool {
		for _, d := range st.Sink.Deliveries(topology.Billing) {
			if d.EventID == "evt_local_missed_1" {
				return true
			}
		}
		return false
	}, 20*time.Second, 50*time.Millisecond, "the missed event reaches billing")

	_, again := devstacktest.AdminDo(t, st, http.MethodPost, "/admin/jobs", start)
	require.Equal(t, id, again["jobId"], "same tenant, key and args: the same job")
	_, list := devstacktest.AdminDo(t, st, http.MethodGet, fmt.Sprintf("/admin/jobs?tenant=platform&kind=%s", "stripe-reconcile"), nil)
	items, _ := list["jobs"].([]any)
	require.Len(t, items, 1, list)
}

// The daily retention expiry runs locally as deployed (issue 32 item 7: no
// schedule sent it, deployed or local): the stack's schedule table has the
// descriptor's rule, and its input, fired at jobs-sweep, starts today's
// retention-expiry job for each tenant with a policy and none for a tenant
// without one.
func TestDailyRetentionExpiryRunsFromItsSchedule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := startStack(t)
	policies := &dynamo.Retention{Client: st.Clients.DynamoDB, Table: st.Resources.JobsTable}
	for _, tenant := range []string{"acme", "globex"} {
		_, err := policies.Put(ctx, retention.Policy{TenantID: tenant, EventsDays: 30})
		require.NoError(t, err)
	}
	table, err := st.Schedules()
	require.NoError(t, err)
	i := slices.IndexFunc(table, func(s devstack.Schedule) bool { return s.Rule == "retention-expiry" })
	require.GreaterOrEqual(t, i, 0, "the stack fires the daily retention expiry: %v", table)
	sch := table[i]
	require.Equal(t, devstack.FunctionJobsSweep, sch.Local)
	require.Equal(t, "cron(47 3 * * ? *)", sch.Expression)
	require.NotNil(t, sch.Next)

	out, err := st.Invoke(ctx, sch.Local, sch.Input)
	require.NoError(t, err)
	var started jobs.DailyStarted
	require.NoError(t, json.Unmarshal(out, &started), string(out))
	require.Empty(t, started.Failed)
	var tenants []string
	for _, j := range started.Jobs {
		tenants = append(tenants, j.TenantID)
		require.True(t, j.Created, "%s: today's purge is new", j.TenantID)
	}
	require.ElementsMatch(t, []string{"acme", "globex"}, tenants)
	store := &dynamo.Jobs{Client: st.Clients.DynamoDB, Table: st.Resources.JobsTable}
	for _, tenant := range []string{"acme", "globex", "initech"} {
		page, err := store.List(ctx, jobs.ListParams{TenantID: tenant, Kind: jobkinds.KindRetention, Limit: 10})
		require.NoError(t, err)
		if tenant == "initech" {
			require.Empty(t, page.Jobs, "no policy, no purge")
			continue
		}
		require.Len(t, page.Jobs, 1, tenant)
		require.Contains(t, string(page.Jobs[0].Args), time.Now().UTC().Format(time.DateOnly))
	}
}
