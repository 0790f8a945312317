package suites_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// Issue 36 §2 and §4 in a real browser against the local stack: the
// overview shows the last hour's deliveries and latency per topic (the
// consumers' metrics through the stack's CloudWatch API), when it was
// rendered, the last error as text and the incidents chart with labelled
// axes; a topic is paused and resumed by its button; an event retried once
// shows both attempts as a timeline, a dead-lettered one its refused
// attempt on the incident page; the jobs page lists a finished export
// with its progress, its page shows the result readably and links its
// objects, and a link leads to a presigned URL of the local S3.
func TestConsoleOperatorPagesInABrowser(t *testing.T) {
	bin := chromium(t)
	st, err := devstack.Start(context.Background(), devstack.Options{
		Addr: "127.0.0.1:0", Prefix: awslocal.NewPrefix(), Log: logging.Discard(), Env: envconf.FromMap(nil),
		Settings: map[string]string{"CONSUMER_BACKOFF_BASE": "1s", "CONSUMER_BACKOFF_CAP": "1s"},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	k := &costKit{t: t, st: st, lambda: st.Clients.Lambda}
	ctx0 := context.Background()
	// Stripe events created now (the sample's creation time is months
	// old: its delivery latency would be too).
	fresh := func(id string) []byte {
		return regexp.MustCompile(`"created": \d+`).ReplaceAll(k.stripeEvent(id), []byte(fmt.Sprintf(`"created": %d`, time.Now().Unix())))
	}

	// Deliveries: a few delivered, one retried once, one dead-lettered.
	for i := range 3 {
		id := fmt.Sprintf("evt_ops_ok_%d", i)
		k.postStripe(fresh(id))
		k.waitFor("delivered", func() bool { return k.delivered(topology.Billing, id) })
	}
	st.Sink.Fail(topology.Billing, http.StatusServiceUnavailable, 0)
	k.postStripe(fresh("evt_ops_retry"))
	k.waitFor("a failed attempt", func() bool {
		for _, d := range st.Sink.Deliveries(topology.Billing) {
			if d.EventID == "evt_ops_retry" {
				return true
			}
		}
		return false
	})
	st.Sink.Recover(topology.Billing)
	k.waitFor("delivered on the retry", func() bool { return k.delivered(topology.Billing, "evt_ops_retry") })
	incidents := &dynamo.Incidents{Client: st.Clients.DynamoDB, Table: st.Resources.IncidentsTable}
	st.Sink.Fail(topology.Billing, http.StatusUnprocessableEntity, 0)
	k.postStripe(fresh("evt_ops_dead"))
	dead := incident.ID("evt_ops_dead", topology.Billing)
	k.waitFor("an incident", func() bool { _, err := incidents.Get(ctx0, dead); return err == nil })
	st.Sink.Recover(topology.Billing)

	// A finished export of the tenant's internal events.
	for i := range 3 {
		k.invoke("ingest", inquiry(fmt.Sprintf("inq_ops_%d", i)))
	}
	var started struct {
		Job struct {
			ID string `json:"jobId"`
		} `json:"job"`
	}
	require.NoError(t, json.Unmarshal(k.invoke(devstack.FunctionReplay, map[string]any{"action": "jobs.start", "kind": "tenant-export", "tenantId": "acme", "args": map[string]any{"pageSize": 2}}), &started))
	exportID := started.Job.ID
	store := &dynamo.Jobs{Client: st.Clients.DynamoDB, Table: st.Resources.JobsTable}
	k.waitFor("the export", func() bool {
		j, ok, err := store.Get(ctx0, exportID)
		return err == nil && ok && j.Status == jobs.StatusCompleted
	})

	ctx := browser(t, bin, ctx0, 1400, 1000)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancelTimeout)
	base := st.URL()
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		require.NoError(t, err, sel)
		return v
	}
	count := func(sel string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
		require.NoError(t, err, sel)
		return n
	}

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"/console"),
		chromedp.WaitVisible(chromedp.ID("key")),
		chromedp.SendKeys(chromedp.ID("key"), st.AdminKey()),
		chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.ID("topics")),
	))
	require.Contains(t, text("#rendered"), "Rendered ")
	billing := fmt.Sprintf(`#topics tr:has(a[href="/console/incidents?topic=%s"])`, topology.Billing)
	row := strings.Fields(text(billing))
	require.Contains(t, row, topology.Billing)
	tds, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).map(td => td.textContent.trim())`, billing+" td")))
	require.NoError(t, err)
	// topic, consumer, queued, in flight, DLQ, open, delivered, failed, p50, p99, subscriber, last error, action
	require.Len(t, tds, 13, "%q", tds)
	delivered, err := strconv.Atoi(tds[6])
	require.NoError(t, err, tds[6])
	require.GreaterOrEqual(t, delivered, 4, "the last hour's deliveries, from the consumers' metrics")
	failed, err := strconv.Atoi(tds[7])
	require.NoError(t, err, tds[7])
	require.GreaterOrEqual(t, failed, 2, "the 503 and the 422")
	require.Regexp(t, `^\d+(\.\d)? m?s$`, tds[8], "p50")
	require.Regexp(t, `^\d+(\.\d)? m?s$`, tds[9], "p99")
	require.Contains(t, tds[11], "subscriber_rejected", "the last error, as text")
	require.Equal(t, 1, count("#incident-chart"))
	require.Equal(t, 2, count("#incident-chart text.axis"), "both axes labelled")
	require.Positive(t, count("#incident-chart text.tick"))
	if *consoleShots {
		shot(t, ctx, "../../../docs/console-overview.png")
	}

	// Pause and resume by the row's button.
	pause, resume := "#pause-"+strings.ReplaceAll(topology.Billing, ".", `\.`), "#resume-"+strings.ReplaceAll(topology.Billing, ".", `\.`)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`input[name="reason"]`), "subscriber maintenance"),
		chromedp.Click(chromedp.CSS(pause)),
		chromedp.WaitVisible(chromedp.CSS(resume)),
	))
	require.Contains(t, text(".flash"), topology.Billing+" paused")
	require.Contains(t, text(billing), "subscriber maintenance", "the reason shows")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(resume)),
		chromedp.WaitVisible(chromedp.CSS(pause)),
	))
	require.Contains(t, text(".flash"), topology.Billing+" resumed")

	// The retried event: both attempts, in order.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"/console/events/evt_ops_retry"),
		chromedp.WaitVisible(chromedp.CSS("ol.timeline")),
	))
	require.Equal(t, 1, count("ol.timeline li.o-failed"))
	require.Equal(t, 1, count("ol.timeline li.o-delivered"))
	steps := text("ol.timeline")
	require.Less(t, strings.Index(steps, "#1"), strings.Index(steps, "#2"))
	require.Contains(t, steps, "503")
	require.Contains(t, steps, "retry")
	require.Contains(t, text("#dispatches thead"), "failed sends", "the row's failed sends to the queue, not named like the delivery attempts")
	if *consoleShots {
		shot(t, ctx, "../../../docs/console-event.png")
	}

	// The dead-lettered event's incident: its refused attempt.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"/console/incidents/"+dead),
		chromedp.WaitVisible(chromedp.CSS("ol.timeline")),
	))
	require.Equal(t, 1, count("ol.timeline li.o-dead_lettered"))
	require.Contains(t, text("ol.timeline"), "422")

	// Jobs: the export listed with its progress; its page.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"/console/jobs"),
		chromedp.WaitVisible(chromedp.ID("jobs")),
	))
	exportRow := fmt.Sprintf(`#jobs tr:has(a[href="/console/jobs/%s"])`, exportID)
	require.Contains(t, text(exportRow), "completed")
	require.Equal(t, 1, count(exportRow+" progress"), "its progress")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(exportRow+" a")),
		chromedp.WaitVisible(chromedp.ID("downloads")),
	))
	require.Contains(t, text("#result"), "manifest key")
	require.Regexp(t, `events\s+8\s+incidents\s+1`, text("#result"), "the 5 Stripe and 3 internal events of acme, the dead letter")
	require.Positive(t, count("#downloads a"))
	require.Regexp(t, `\b1 incident\b`, text("#downloads"), "a part's count in words")
	require.NotContains(t, text("#downloads"), "1 incidents")
	if *consoleShots {
		shot(t, ctx, "../../../docs/console-jobs.png")
	}

	// A download link: the session's click signs a presigned URL of the
	// local S3 and redirects there; the URL reads without credentials.
	attr, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("#downloads a"), "href"))
	require.NoError(t, err)
	href := attr.Value
	got, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodGet, base+href, nil)
	require.NoError(t, err)
	req.AddCookie(&http.Cookie{Name: got.Cookies[0].Name, Value: got.Cookies[0].Value})
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Do(req)
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "%s: %s", href, page)
	loc := resp.Header.Get("Location")
	require.Contains(t, loc, "X-Amz-Signature=")
	resp, err = http.Get(loc)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Contains(t, string(body), `"tenantId": "acme"`, "the manifest")
}
