package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/wire/wiretest"
)

// The overview shows a probe time only for a topic that has one: every
// closed topic showed "probe 00:00:00" (a zero time.Time is not empty to
// {{with}}).
func TestConsoleOverviewShowsNoProbeForClosedTopics(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.console(t, http.MethodGet, "/console", nil, "", key)
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, `<span class="badge closed"`, "the topics' breakers are shown")
	require.NotContains(t, p.Body, "probe 00:00:00")
	require.NotContains(t, p.Body, "probe ")
}

// An incident page offers the actions its status allows: an open one
// replay, triage and ignore (each note box labelled with what it is for);
// a triaged one replay and ignore; a resolved or ignored one none (it
// offered all three, which the lifecycle then refused).
func TestConsoleIncidentOffersOnlyAllowedActions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.publish(t, "evt_act_1", "inquiry.created", "storefront", "acme")
	inc := b.deadLetter(t, "acme/evt_act_1", "crm.sync")
	forms := func() []string {
		t.Helper()
		p := b.console(t, http.MethodGet, "/console/incidents/"+inc.ID, nil, "", key)
		require.Equal(t, http.StatusOK, p.Status, p.Body)
		var got []string
		for _, m := range regexp.MustCompile(`action="/console/incidents/[^/]+/(\w+)"`).FindAllStringSubmatch(p.Body, -1) {
			got = append(got, m[1])
		}
		for _, label := range regexp.MustCompile(`<label>([^<]*)<input name="note"`).FindAllStringSubmatch(p.Body, -1) {
			require.Greater(t, len(label[1]), len("note"), "a note box says what it is for: %q", label[1])
		}
		require.Equal(t, strings.Count(p.Body, `name="note"`), len(regexp.MustCompile(`<label>[^<]+<input name="note"`).FindAllString(p.Body, -1)), "every note box is labelled")
		return got
	}
	require.Equal(t, []string{"replay", "triage", "ignore"}, forms(), "open")

	set := func(change func(inc *incident.Incident)) {
		t.Helper()
		got, err := b.incidents.Get(ctx, inc.ID)
		require.NoError(t, err)
		change(&got)
		_, err = b.incidents.Save(ctx, got)
		require.NoError(t, err)
	}
	now := time.Now().UTC()
	set(func(i *incident.Incident) { require.NoError(t, i.Move(incident.StatusTriaged, "ada", "looking", now)) })
	require.Equal(t, []string{"replay", "ignore"}, forms(), "triaged")

	set(func(i *incident.Incident) {
		require.NoError(t, i.StartReplay("ada", "fixed", "tok", now, false))
		require.NoError(t, i.Move(incident.StatusResolved, incident.ActorReplay, "delivered", now))
	})
	require.Empty(t, forms(), "resolved: nothing to do")
	p := b.console(t, http.MethodGet, "/console/incidents/"+inc.ID, nil, "", key)
	require.Contains(t, p.Body, `id="no-actions"`)
	require.Contains(t, p.Body, "evp dlq replay --force "+inc.ID)
}

// `status=any` (the CLI's spelling) lists every status in the console and
// the JSON API; it was refused as an unknown status.
func TestConsoleIncidentsStatusAny(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.publish(t, "evt_any_1", "inquiry.created", "storefront", "acme")
	inc := b.deadLetter(t, "acme/evt_any_1", "crm.sync")
	got, err := b.incidents.Get(ctx, inc.ID)
	require.NoError(t, err)
	require.NoError(t, got.Move(incident.StatusIgnored, "ada", "test data", time.Now().UTC()))
	_, err = b.incidents.Save(ctx, got)
	require.NoError(t, err)

	p := b.console(t, http.MethodGet, "/console/incidents?status=any&tenant=acme", nil, "", key)
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, inc.ID, "the ignored incident")
	a := b.get(t, "/admin/incidents?status=any&tenant=acme")
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	require.Len(t, a.Body["incidents"], 1)
	p = b.console(t, http.MethodGet, "/console/incidents?tenant=acme", nil, "", key)
	require.NotContains(t, p.Body, inc.ID, "open by default")
}

// A job's page: times to the second (they were RFC 3339 with
// nanoseconds), args and result as indented JSON (one raw line), Cancel
// only while it runs and Restart unless it completed (a completed job
// offered both).
func TestConsoleJobPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	engine := wiretest.Jobs(t, b.env, wiretest.Opts{})
	a := b.call(t, http.MethodPost, "/admin/jobs", `{"kind":"tenant-export","tenantId":"acme","args":{"pageSize":10}}`, "Bearer "+key)
	require.Equal(t, http.StatusCreated, a.Status, a.Body)
	id := a.Body["jobId"].(string)

	page := func() string {
		t.Helper()
		p := b.console(t, http.MethodGet, "/console/jobs/"+id, nil, "", key)
		require.Equal(t, http.StatusOK, p.Status, p.Body)
		return p.Body
	}
	body := page()
	require.Contains(t, body, `action="/console/jobs/`+id+`/cancel"`, "a queued job can be cancelled")
	require.Contains(t, body, `action="/console/jobs/`+id+`/restart"`)

	// Run it to the end as jobs-worker does.
	for range 20 {
		j, err := engine.Get(ctx, id)
		require.NoError(t, err)
		if j.Status.Terminal() {
			break
		}
		require.NoError(t, engine.RunWake(ctx, jobs.Wake{TenantID: j.TenantID, IdempotencyKey: j.IdempotencyKey,
			Payload: jobs.WakePayload{Kind: j.Kind, JobID: j.ID, Generation: j.Generation}}))
	}
	j, err := engine.Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, jobs.StatusCompleted, j.Status)

	body = page()
	require.NotContains(t, body, `action="/console/jobs/`+id+`/cancel"`, "a completed job cannot be cancelled")
	require.NotContains(t, body, `action="/console/jobs/`+id+`/restart"`, "nor re-run by a restart")
	require.NotRegexp(t, `\d{2}:\d{2}:\d{2}\.\d+`, body, "no fractional seconds")
	require.Contains(t, body, j.UpdatedAt.UTC().Format("2006-01-02 15:04:05Z"))
	var result map[string]any
	require.NoError(t, json.Unmarshal(j.Result, &result))
	require.Regexp(t, `(?s)<pre id="job-result">\{\n  &#34;`, body, "the result indented, a member a line")

	list := b.console(t, http.MethodGet, "/console/jobs?tenant=acme", nil, "", key)
	require.Equal(t, http.StatusOK, list.Status, list.Body)
	require.Contains(t, list.Body, id)
	require.NotRegexp(t, `\d{2}:\d{2}:\d{2}\.\d+`, list.Body, "no fractional seconds in the list")
}
