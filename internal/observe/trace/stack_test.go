package trace_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	stripewebhook "github.com/stripe/stripe-go/v76/webhook"

	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/observe/trace"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// TestTraceFollowsAnEventThroughTheStack runs the local stack with a
// daemon address: one Stripe event's trace goes from the webhook through
// ingest (the Lambda invoke carries the header) into SQS (AWSTraceHeader)
// and the consumer's processing of the message.
func TestTraceFollowsAnEventThroughTheStack(t *testing.T) {
	d := newDaemon(t)
	t.Cleanup(func() { _ = trace.Configure(trace.Options{}) })
	st, err := devstack.Start(context.Background(), devstack.Options{
		Addr: "127.0.0.1:0", Prefix: awslocal.NewPrefix(), Log: logging.Discard(),
		Env: envconf.FromMap(map[string]string{devstack.SettingXRayDaemon: d.conn.LocalAddr().String()}),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	require.True(t, trace.Enabled())

	body, err := os.ReadFile("../../../events/stripe/invoice.paid.json")
	require.NoError(t, err)
	signed := stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{Payload: body, Secret: devstack.DefaultStripeSecret, Timestamp: time.Now()})
	req, err := http.NewRequest(http.MethodPost, st.URL()+"/webhook/stripe", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Stripe-Signature", signed.Header)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// Collect segment documents until the three arrived (in any order: the
	// consumer may finish before the webhook's segment closes).
	byName := map[string]segment{}
	want := []string{"webhook-stripe", "ingest", "consume billing.events"}
	complete := func() bool {
		for _, n := range want {
			if byName[n].ID == "" {
				return false
			}
		}
		return true
	}
	buf := make([]byte, 64<<10)
	deadline := time.Now().Add(20 * time.Second)
	for !complete() {
		require.NoError(t, d.conn.SetReadDeadline(deadline))
		n, _, err := d.conn.ReadFromUDP(buf)
		require.NoError(t, err, "segments so far: %v", names(byName))
		_, doc, _ := bytes.Cut(buf[:n], []byte("\n"))
		var s segment
		require.NoError(t, json.Unmarshal(doc, &s))
		if _, seen := byName[s.Name]; !seen {
			byName[s.Name] = s
		}
	}
	hook, ingest, consume := byName["webhook-stripe"], byName["ingest"], byName["consume billing.events"]
	require.NotEmpty(t, hook.TraceID, "the webhook starts the trace")
	require.Empty(t, hook.ParentID)
	require.Equal(t, hook.TraceID, ingest.TraceID, "ingest continues it")
	require.Equal(t, hook.TraceID, consume.TraceID, "so does the consumer, through AWSTraceHeader")
	require.NotEmpty(t, ingest.ParentID)
	require.NotEmpty(t, consume.ParentID)

	// The webhook's Lambda call is ingest's parent; ingest itself is the
	// consumer's (the header is taken before its SQS send, which is a
	// subsegment of it).
	require.Equal(t, "Lambda", sub(t, hook, ingest.ParentID).Name)
	require.Equal(t, ingest.ID, consume.ParentID)
	require.True(t, hasCall(ingest.Subsegments, "SQS", "SendMessage"), "ingest's send is traced")
	require.True(t, hasCall(ingest.Subsegments, "DynamoDB", "TransactWriteItems"), "so is its commit")
	require.Equal(t, "evt_1PzB7sLkdIwHu7ixQm3nT0aX", consume.Annotations["eventId"], "searchable by event id: %v", consume.Annotations)
	require.Equal(t, "billing.events", consume.Annotations["topic"])
	require.Equal(t, "acme", consume.Annotations["tenantId"])

	// The subscriber gets the same trace in W3C form.
	require.Eventually(t, func() bool { return len(st.Sink.Deliveries(topology.Billing)) > 0 }, 10*time.Second, 20*time.Millisecond)
	tp := st.Sink.Deliveries(topology.Billing)[0].Headers["traceparent"]
	wantPrefix := "00-" + strings.ReplaceAll(strings.TrimPrefix(hook.TraceID, "1-"), "-", "") + "-"
	require.True(t, strings.HasPrefix(tp, wantPrefix), "traceparent %q joins trace %s", tp, hook.TraceID)
	require.True(t, strings.HasSuffix(tp, "-01"), "sampled")
}

func names(m map[string]segment) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// sub finds the subsegment id anywhere under s.
func sub(t *testing.T, s segment, id string) segment {
	t.Helper()
	var find func([]segment) (segment, bool)
	find = func(ss []segment) (segment, bool) {
		for _, c := range ss {
			if c.ID == id {
				return c, true
			}
			if f, ok := find(c.Subsegments); ok {
				return f, true
			}
		}
		return segment{}, false
	}
	got, ok := find(s.Subsegments)
	require.True(t, ok, "no subsegment %s under %s", id, s.Name)
	return got
}

func hasCall(ss []segment, service, op string) bool {
	for _, s := range ss {
		if s.Name == service && s.AWS["operation"] == op || hasCall(s.Subsegments, service, op) {
			return true
		}
	}
	return false
}
