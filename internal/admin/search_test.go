package admin_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
)

// pages follows a listing's next cursors from target, returning the ids
// (field idKey of each item of list) page by page and each page's prev.
func (b *bundle) pages(t *testing.T, target, list, idKey string) (pages [][]string, prevs []string) {
	t.Helper()
	cursor := ""
	for range 50 {
		u := target
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		a := b.get(t, u)
		require.Equal(t, http.StatusOK, a.Status, "%s: %v", u, a.Body)
		var ids []string
		for _, it := range a.Body[list].([]any) {
			ids = append(ids, it.(map[string]any)[idKey].(string))
		}
		prev, _ := a.Body["prev"].(string)
		pages, prevs = append(pages, ids), append(prevs, prev)
		if cursor, _ = a.Body["next"].(string); cursor == "" {
			return pages, prevs
		}
	}
	t.Fatalf("%s: the listing does not end", target)
	return nil, nil
}

// GET /admin/events: a tenant's events newest first, each with its
// status, filtered by type and subject, paged with next and prev; bad
// filters and cursors are refused with their codes.
func TestEventSearchAndPaging(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var want []string
	for i := range 7 {
		id := fmt.Sprintf("evt_adm_%d", i)
		b.publishSubject(t, id, i%2, "acme", fmt.Sprintf("contact-%d", i%3))
		want = append([]string{id}, want...)
		time.Sleep(2 * time.Millisecond) // distinct acceptance times
	}
	b.publishSubject(t, "evt_adm_globex", 0, "globex", "contact-0")

	pages, prevs := b.pages(t, "/admin/events?tenant=acme&limit=3", "events", "eventId")
	require.Equal(t, want, slices.Concat(pages...))
	require.Len(t, pages, 3)
	require.Empty(t, prevs[0])
	a := b.get(t, "/admin/events?tenant=acme&limit=3&cursor="+url.QueryEscape(prevs[1]))
	require.Equal(t, http.StatusOK, a.Status)
	var back []string
	for _, e := range a.Body["events"].([]any) {
		ev := e.(map[string]any)
		back = append(back, ev["eventId"].(string))
		require.Equal(t, "enqueued", ev["status"], "no consumer runs here: sent, not yet delivered")
	}
	require.Equal(t, pages[0], back, "prev of page 2 is page 1")

	for _, c := range []struct {
		query string
		want  []string
	}{
		{"&type=content.published", []string{"evt_adm_5", "evt_adm_3", "evt_adm_1"}},
		{"&subject=contact-0", []string{"evt_adm_6", "evt_adm_3", "evt_adm_0"}},
		{"&subject=contact-0&type=inquiry.created", []string{"evt_adm_6", "evt_adm_0"}},
		{"&status=enqueued&limit=2", want},
		{"&status=any", want},
		{"&status=completed", nil},
		{"&since=2000-01-01T00:00:00Z&until=2001-01-01T00:00:00Z", nil},
	} {
		pages, _ := b.pages(t, "/admin/events?tenant=acme"+c.query, "events", "eventId")
		require.Equal(t, c.want, slices.Concat(pages...), c.query)
	}

	other := b.get(t, "/admin/events?tenant=acme&limit=1&type=content.published")
	for query, code := range map[string]string{
		"":                        "invalid_filter",
		"?tenant=NOT+OK":          "invalid_filter",
		"?tenant=acme&status=odd": "invalid_filter",
		"?tenant=acme&limit=0":    "invalid_filter",
		"?tenant=acme&limit=500":  "invalid_filter",
		"?tenant=acme&since=soon": "invalid_filter",
		"?tenant=acme&cursor=x!":  "invalid_cursor",
		// Another listing's cursor.
		"?tenant=acme&cursor=" + url.QueryEscape(other.Body["next"].(string)): "invalid_cursor",
	} {
		a := b.get(t, "/admin/events"+query)
		require.Equal(t, http.StatusBadRequest, a.Status, query)
		require.Equal(t, code, errCode(a), query)
	}
	require.Equal(t, http.StatusMethodNotAllowed, b.call(t, http.MethodPost, "/admin/events?tenant=acme", "", "Bearer "+key).Status)
}

// GET /admin/incidents by event, error code and type, paged both ways.
func TestIncidentSearchByEventErrorCodeAndType(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var all []string // newest first
	for i := range 6 {
		id := fmt.Sprintf("evt_inc_%d", i)
		b.publishSubject(t, id, i%2, "acme", "contact-1")
		inc := b.deadLetter(t, ledger.ScopedKey("acme", id), "crm.sync")
		if i%3 == 0 {
			_, err := incident.Update(ctx, b.incidents, inc.ID, func(x *incident.Incident) error {
				x.ErrorCode = "subscriber_rejected"
				return nil
			})
			require.NoError(t, err)
		}
		all = append([]string{inc.ID}, all...)
		time.Sleep(2 * time.Millisecond)
	}
	byEvent := b.get(t, "/admin/incidents?status=any&tenant=acme&event=evt_inc_4")
	require.Equal(t, http.StatusOK, byEvent.Status, byEvent.Body)
	require.Len(t, byEvent.Body["incidents"], 1)
	require.Equal(t, incident.ID(ledger.ScopedKey("acme", "evt_inc_4"), "crm.sync"), byEvent.Body["incidents"].([]any)[0].(map[string]any)["incidentId"])
	require.Empty(t, b.get(t, "/admin/incidents?status=any&event=evt_inc_4").Body["incidents"], "an internal producer's event is found with its tenant")

	for _, c := range []struct {
		query string
		want  []string
	}{
		{"?status=any&errorCode=subscriber_rejected&limit=1", []string{all[2], all[5]}},
		{"?tenant=acme&type=content.published&limit=2", []string{all[0], all[2], all[4]}},
		{"?errorCode=http_503&type=inquiry.created", []string{all[1], all[3]}},
		{"?status=open&limit=4", all},
	} {
		pages, prevs := b.pages(t, "/admin/incidents"+c.query, "incidents", "incidentId")
		require.Equal(t, c.want, slices.Concat(pages...), c.query)
		if len(pages) > 1 {
			a := b.get(t, "/admin/incidents"+c.query+"&cursor="+url.QueryEscape(prevs[len(prevs)-1]))
			var ids []string
			for _, it := range a.Body["incidents"].([]any) {
				ids = append(ids, it.(map[string]any)["incidentId"].(string))
			}
			require.Equal(t, pages[len(pages)-2], ids, "%s: back one page", c.query)
		}
	}
	a := b.get(t, "/admin/incidents?event=evt_inc_4&tenant=acme&cursor=abc")
	require.Equal(t, http.StatusBadRequest, a.Status)
}

// GET /admin/jobs without a tenant or a kind: every tenant's jobs of every
// kind, newest first, by status, paged.
func TestJobsAcrossTenantsAndKinds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	post := func(body string) string {
		a := b.call(t, http.MethodPost, "/admin/jobs", body, "Bearer "+key)
		require.Equal(t, http.StatusCreated, a.Status, a.Body)
		time.Sleep(2 * time.Millisecond)
		return a.Body["jobId"].(string)
	}
	first := post(`{"kind":"tenant-export","tenantId":"acme"}`)
	second := post(`{"kind":"subject-erasure","tenantId":"globex","args":{"subject":"cus_1"}}`)
	third := post(`{"kind":"tenant-export","tenantId":"initech"}`)
	require.Equal(t, http.StatusOK, b.call(t, http.MethodPost, "/admin/jobs/"+second+"/cancel", "", "Bearer "+key).Status)

	pages, prevs := b.pages(t, "/admin/jobs?limit=1", "jobs", "jobId")
	require.Equal(t, []string{third, second, first}, slices.Concat(pages...))
	a := b.get(t, "/admin/jobs?limit=1&cursor="+url.QueryEscape(prevs[2]))
	require.Equal(t, second, a.Body["jobs"].([]any)[0].(map[string]any)["jobId"], "back one page")
	pages, _ = b.pages(t, "/admin/jobs?status=queued", "jobs", "jobId")
	require.Equal(t, []string{third, first}, slices.Concat(pages...))
	pages, _ = b.pages(t, "/admin/jobs?status=cancelled", "jobs", "jobId")
	require.Equal(t, []string{second}, slices.Concat(pages...))
}

// publishSubject publishes an internal event of tenant about subject: an
// inquiry.created (kind 0: to notifications and crm.sync) or a
// content.published (kind 1: to cache.purge).
func (b *bundle) publishSubject(t testing.TB, id string, kind int, tenant, subject string) {
	t.Helper()
	typ, source := []string{"inquiry.created", "content.published"}[kind], []string{"storefront", "cms"}[kind]
	raw := testkit.MustJSON(map[string]any{"id": id, "tenantId": tenant, "type": typ, "source": source, "subject": subject,
		"timestamp": time.Now().UTC().Add(-time.Minute).Format(time.RFC3339), "payload": map[string]any{"name": "Ada"}})
	res, err := b.ingest.Publish(context.Background(), []byte(raw))
	require.NoError(t, err)
	require.NotEqual(t, "rejected", string(res.Status), "%+v", res)
}
