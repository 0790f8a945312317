package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// getJSON GETs a stack URL (with the local admin key) and decodes it.
func getJSON(t *testing.T, url string, out any) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+devstack.DefaultAdminKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, out), "%s", b)
	return resp.StatusCode
}

func httpDo(t *testing.T, method, url string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// delivered counts the sink's accepted deliveries of an event to a topic.
func delivered(st *devstack.Stack, topic, eventID string) int {
	n := 0
	for _, d := range st.Sink.Deliveries(topic) {
		if d.EventID == eventID && d.Delivered() {
			n++
		}
	}
	return n
}

// TestQuickstart walks the README quickstart against a local stack on a
// random port, with the real functions and the evp commands a developer
// types: a signed Stripe event is delivered to the HTTP subscriber; the
// same event again is acknowledged and not delivered twice; with the
// subscriber failing, the next event goes to the DLQ and becomes an
// incident (visible through /admin and `evp dlq list`); once the subscriber
// recovers, `evp dlq replay` delivers it and the incident is resolved.
func TestQuickstart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := devstack.Start(ctx, devstack.Options{
		Addr: "127.0.0.1:0", Prefix: awslocal.NewPrefix(), Log: logging.Discard(), Env: envconf.FromMap(nil),
		// Default settings, as `make dev` has them; the sweeper is kept out
		// of the way (nothing here needs it).
		Settings: map[string]string{devstack.SettingSweepEvery: "1h"},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	url := st.URL()
	const billing = topology.Billing

	// 1. A signed Stripe event → 200 → delivered to the HTTP sink.
	out, err := run(t, ctx, "", "stripe", "send", "invoice.paid", "--url", url)
	require.NoError(t, err, out)
	require.True(t, strings.HasPrefix(out, "HTTP 200 OK"), out)
	first := answerBody(t, out)
	require.Equal(t, "enqueued", first["status"])
	id := first["eventId"].(string)
	require.Eventually(t, func() bool { return delivered(st, billing, id) == 1 }, 30*time.Second, 50*time.Millisecond, "delivered to the sink")
	d := st.Sink.Deliveries(billing)[0]
	require.NotEmpty(t, d.Headers["webhook-signature"], "signed for the subscriber")

	var ev map[string]any
	require.Equal(t, http.StatusOK, getJSON(t, url+"/admin/events/"+id, &ev))
	require.Eventually(t, func() bool {
		getJSON(t, url+"/admin/events/"+id, &ev)
		return ev["status"] == "completed"
	}, 10*time.Second, 50*time.Millisecond, "the dispatch completes: %v", ev)

	// 2. The same event again → 200 duplicate → no second delivery.
	out, err = run(t, ctx, "", "stripe", "send", "invoice.paid", "--url", url)
	require.NoError(t, err, out)
	require.Equal(t, "duplicate_acknowledged", answerBody(t, out)["status"])
	q := st.Resources.Queues[billing]
	depth := func() int {
		var v struct {
			Topics []struct {
				Topic             string
				Visible, InFlight int
			}
		}
		getJSON(t, url+"/admin/queues", &v)
		for _, tp := range v.Topics {
			if tp.Topic == billing {
				return tp.Visible + tp.InFlight
			}
		}
		t.Fatalf("no %s in /admin/queues", billing)
		return -1
	}
	require.Zero(t, depth(), "nothing was re-enqueued for %s", q.URL)
	time.Sleep(1500 * time.Millisecond) // a poll cycle: a stray message would have been delivered by now
	require.Equal(t, 1, delivered(st, billing, id), "no second delivery")

	// 3. A failing subscriber → DLQ → incident, visible through /admin and
	// `evp dlq list`.
	require.Equal(t, http.StatusOK, httpDo(t, http.MethodPost, url+devstack.SinkPath+"/fail?topic="+billing+"&status=503&retryAfter=1"))
	out, err = run(t, ctx, "", "stripe", "send", "invoice.paid", "--new-id", "--url", url)
	require.NoError(t, err, out)
	second := answerBody(t, out)["eventId"].(string)
	incID := incident.ID(second, billing)
	var page incident.Page
	require.Eventually(t, func() bool {
		getJSON(t, url+"/admin/incidents?status=open&topic="+billing, &page)
		return len(page.Incidents) == 1
	}, 90*time.Second, 200*time.Millisecond, "the dead letter becomes an open incident")
	inc := page.Incidents[0]
	require.Equal(t, incID, inc.ID)
	require.Equal(t, second, inc.EventID)
	require.Contains(t, inc.ErrorMessage+inc.ErrorDetail, "503")
	require.Zero(t, delivered(st, billing, second))
	require.GreaterOrEqual(t, len(st.Sink.Deliveries(billing)), 3, "the failed attempts reached the subscriber")

	out, err = run(t, ctx, "", "dlq", "list", "--url", url)
	require.NoError(t, err, out)
	require.Contains(t, out, incID)
	require.Contains(t, out, billing)

	// 4. The subscriber recovers → replay → delivered → resolved.
	require.Equal(t, http.StatusNoContent, httpDo(t, http.MethodDelete, url+devstack.SinkPath+"/fail"))
	out, err = run(t, ctx, "", "dlq", "replay", incID, "--url", url)
	require.NoError(t, err, out)
	require.Eventually(t, func() bool { return delivered(st, billing, second) == 1 }, 30*time.Second, 50*time.Millisecond, "the replay is delivered")
	var view map[string]any
	require.Eventually(t, func() bool {
		getJSON(t, url+"/admin/incidents/"+incID, &view)
		return view["status"] == string(incident.StatusResolved)
	}, 10*time.Second, 50*time.Millisecond, "the consumer attests the replay: %v", view["status"])
	require.Equal(t, incident.ActorReplay, view["resolvedBy"])
	out, err = run(t, ctx, "", "dlq", "list", "--url", url)
	require.NoError(t, err, out)
	require.NotContains(t, out, incID, "no longer open")
}
