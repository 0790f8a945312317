package suites_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// Search and paging in the console, in a real browser against the local
// stack: a tenant's events a page at a time with next and previous links,
// searched by customer and by status; incidents paged both ways and found
// by their event.
func TestConsoleSearchAndPagingInABrowser(t *testing.T) {
	bin := chromium(t)
	st, err := devstack.Start(context.Background(), devstack.Options{
		Addr: "127.0.0.1:0", Prefix: awslocal.NewPrefix(), Log: logging.Discard(), Env: envconf.FromMap(nil),
		Settings: map[string]string{"CONSUMER_BACKOFF_BASE": "1s", "CONSUMER_BACKOFF_CAP": "1s"},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	k := &costKit{t: t, st: st}
	incidents := &dynamo.Incidents{Client: st.Clients.DynamoDB, Table: st.Resources.IncidentsTable}

	// Five invoices of tenant acme, two of them customer cus_search's; the
	// last two dead-lettered by a subscriber that refuses them.
	sample := k.stripeEvent("evt_search_x")
	var ids []string // newest first
	for i := range 5 {
		id := fmt.Sprintf("evt_search_%d", i)
		body := bytes.Replace(sample, []byte("evt_search_x"), []byte(id), 1)
		if i%2 == 1 {
			body = bytes.ReplaceAll(body, []byte("cus_QqR8mN2pLk4sTv"), []byte("cus_search"))
		}
		refuse := i >= 3
		if refuse {
			k.st.Sink.Fail(topology.Billing, http.StatusUnprocessableEntity, 0)
		}
		k.postStripe(body)
		if refuse {
			incID := incident.ID(id, topology.Billing)
			k.waitFor("an incident for "+id, func() bool { _, err := incidents.Get(context.Background(), incID); return err == nil })
			k.st.Sink.Recover(topology.Billing)
		} else {
			k.waitFor("delivered", func() bool { return k.delivered(topology.Billing, id) })
		}
		ids = append([]string{id}, ids...)
		time.Sleep(5 * time.Millisecond)
	}

	ctx := browser(t, bin, context.Background(), 1280, 900)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancelTimeout)
	base := st.URL()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"/console"),
		chromedp.WaitVisible(chromedp.ID("key")),
		chromedp.SendKeys(chromedp.ID("key"), st.AdminKey()),
		chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.ID("topics")),
	))

	// rows reads a listing table's first column (ids) after the page
	// loaded.
	rows := func(table string) []string {
		t.Helper()
		require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.ID(table))))
		text, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID(table)))
		require.NoError(t, err)
		var out []string
		for _, line := range strings.Split(text, "\n") {
			if f := strings.Fields(line); len(f) > 0 && (strings.HasPrefix(f[0], "evt_") || strings.HasPrefix(f[0], "inc_")) {
				out = append(out, f[0])
			}
		}
		return out
	}
	// follow goes where a link points (as a click does; Navigate also
	// waits for the page to load).
	follow := func(id string) {
		t.Helper()
		link, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.ID(id), "href"))
		require.NoError(t, err)
		require.True(t, link.Exists, "#%s has a link", id)
		require.True(t, strings.HasPrefix(link.Value, "/console/"), link.Value)
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+link.Value)))
	}
	// waitURL waits until the page's address contains part (a form
	// submitted).
	waitURL := func(part string) {
		t.Helper()
		k.waitFor("the page at "+part, func() bool {
			loc, err := chromedp.Run(ctx, chromedp.Location())
			return err == nil && strings.Contains(loc, part)
		})
	}
	has := func(sel string) bool {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
		require.NoError(t, err)
		return n > 0
	}

	// Events, two a page: next, next, then back.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/console/events?tenant=acme&limit=2")))
	require.Equal(t, ids[0:2], rows("events"))
	require.False(t, has("#prev"), "the first page has no previous page")
	follow("next")
	require.Equal(t, ids[2:4], rows("events"))
	follow("next")
	require.Equal(t, ids[4:5], rows("events"))
	require.False(t, has("#next"), "the last page has no next page")
	follow("prev")
	require.Equal(t, ids[2:4], rows("events"))
	follow("prev")
	require.Equal(t, ids[0:2], rows("events"))
	if *consoleShots {
		shot(t, ctx, "../../../docs/console-events.png")
	}

	// The search form: a customer's events, then the dead-lettered ones.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#event-search input[name="customer"]`), "cus_search"),
		chromedp.Submit(chromedp.CSS(`#event-search input[name="customer"]`)),
	))
	waitURL("customer=cus_search")
	require.Equal(t, []string{"evt_search_3", "evt_search_1"}, rows("events"))
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/console/events?tenant=acme&status=dlq")))
	require.Equal(t, []string{"evt_search_4", "evt_search_3"}, rows("events"))

	// Incidents, one a page, both ways (newest failure first; the failure
	// time is to the second, so equal times go by id); and an event's
	// incident.
	var dead []incident.Incident
	for _, id := range []string{"evt_search_3", "evt_search_4"} {
		inc, err := incidents.Get(context.Background(), incident.ID(id, topology.Billing))
		require.NoError(t, err)
		dead = append(dead, inc)
	}
	slices.SortFunc(dead, func(a, b incident.Incident) int {
		if c := b.LastFailedAt.Compare(a.LastFailedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	q := url.Values{"topic": {topology.Billing}, "limit": {"1"}}
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/console/incidents?"+q.Encode())))
	require.Equal(t, []string{dead[0].ID}, rows("incidents"))
	follow("next")
	require.Equal(t, []string{dead[1].ID}, rows("incidents"))
	follow("prev")
	require.Equal(t, []string{dead[0].ID}, rows("incidents"))
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/console/incidents?status=any&event=evt_search_3")))
	require.Equal(t, []string{incident.ID("evt_search_3", topology.Billing)}, rows("incidents"))
	require.False(t, has("#bulk-dry-run"), "an event's incidents are replayed one by one")
}
