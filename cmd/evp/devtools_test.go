package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envelope"
)

// answerBody is the JSON after the status line and headers.
func answerBody(t *testing.T, out string) map[string]any {
	t.Helper()
	_, body, ok := strings.Cut(out, "\n\n")
	require.True(t, ok, out)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &m), out)
	return m
}

func TestStripeSend(t *testing.T) {
	t.Parallel()
	st := startStack(t)
	ctx := context.Background()

	out, err := run(t, ctx, "", "stripe", "send", "invoice.paid", "--url", st.URL())
	require.NoError(t, err, out)
	require.True(t, strings.HasPrefix(out, "HTTP 200 OK\n"), out)
	require.Contains(t, out, "X-Event-Id: evt_1PzB7sLkdIwHu7ixQm3nT0aX")
	require.Equal(t, "enqueued", answerBody(t, out)["status"])

	out, err = run(t, ctx, "", "stripe", "send", "../../events/stripe/invoice.paid.json", "--url", st.URL())
	require.NoError(t, err, out)
	require.Equal(t, "duplicate_acknowledged", answerBody(t, out)["status"], "the same sample is the same event")

	out, err = run(t, ctx, "", "stripe", "send", "invoice.paid", "--new-id", "--tenant", "globex", "--url", st.URL())
	require.NoError(t, err, out)
	res := answerBody(t, out)
	require.Equal(t, "enqueued", res["status"])
	require.True(t, strings.HasPrefix(res["eventId"].(string), "evt_local_"))

	// A type without a sample: a minimal event, tenant from the local
	// default mapping.
	out, err = run(t, ctx, "", "stripe", "send", "invoice.payment_failed", "--url", st.URL())
	require.NoError(t, err, out)
	require.Equal(t, "enqueued", answerBody(t, out)["status"])
	out, err = run(t, ctx, "", "stripe", "send", "customer.deleted", "--url", st.URL())
	require.NoError(t, err, out)
	require.Equal(t, "unrouted", answerBody(t, out)["status"])

	// The wrong secret is the webhook's 401, printed, and a failed command.
	out, err = run(t, ctx, "", "stripe", "send", "invoice.paid", "--new-id", "--secret", "whsec_wrong", "--url", st.URL())
	require.ErrorIs(t, err, errSilent)
	require.True(t, strings.HasPrefix(out, "HTTP 401"), out)

	_, err = run(t, ctx, "", "stripe", "send", "./no-such.json", "--url", st.URL())
	require.ErrorContains(t, err, "no such file")
	_, err = run(t, ctx, "", "stripe", "send", "invoice.paid", "--url", "http://127.0.0.1:1")
	require.ErrorContains(t, err, "is `make dev` running?")
}

// --via eventbridge hands the event to stripe-eventbridge as Stripe's
// EventBridge destination would: the same event by webhook afterwards is
// a duplicate, and an event EventBridge would retry (an unmapped Connect
// account) fails the command with the function's error.
func TestStripeSendViaEventBridge(t *testing.T) {
	t.Parallel()
	st := startStack(t)
	ctx := context.Background()

	out, err := run(t, ctx, "", "stripe", "send", "invoice.voided", "--via", "eventbridge", "--url", st.URL())
	require.NoError(t, err, out)
	require.Contains(t, out, "delivered through EventBridge")
	out, err = run(t, ctx, "", "stripe", "send", "invoice.voided", "--url", st.URL())
	require.NoError(t, err, out)
	require.Equal(t, "duplicate_acknowledged", answerBody(t, out)["status"], "the webhook's delivery of the same event is a duplicate")

	unmapped := filepath.Join(t.TempDir(), "connect.json")
	require.NoError(t, os.WriteFile(unmapped, []byte(`{"id":"evt_eb_unmapped","object":"event","type":"invoice.paid","created":1700000000,"account":"acct_not_mapped","data":{"object":{"id":"in_1"}}}`), 0o600))
	out, err = run(t, ctx, "", "stripe", "send", unmapped, "--via", "eventbridge", "--url", st.URL())
	require.ErrorIs(t, err, errSilent)
	require.Contains(t, out, "unknown_account")
	_, err = run(t, ctx, "", "stripe", "send", "invoice.paid", "--via", "sqs", "--url", st.URL())
	require.ErrorContains(t, err, "webhook or eventbridge")
}

func TestPublish(t *testing.T) {
	t.Parallel()
	st := startStack(t)
	ctx := context.Background()
	result := func(out string) envelope.Result {
		t.Helper()
		var r envelope.Result
		require.NoError(t, json.Unmarshal([]byte(out), &r), out)
		return r
	}

	payload := filepath.Join(t.TempDir(), "inquiry.json")
	require.NoError(t, os.WriteFile(payload, []byte(`{"name":"Ada","message":"hi"}`), 0o600))
	out, err := run(t, ctx, "", "publish", "--url", st.URL(), "--tenant", "acme", "--type", "inquiry.created", "--source", "storefront", "--payload", "@"+payload, "--id", "evt_pub_1")
	require.NoError(t, err, out)
	r := result(out)
	require.Equal(t, envelope.StatusEnqueued, r.Status)
	require.Equal(t, "evt_pub_1", r.EventID)
	require.Equal(t, []string{"notifications.events", "crm.sync"}, r.Topics)

	out, err = run(t, ctx, `{"name":"Ada","message":"hi"}`, "publish", "--url", st.URL(), "--tenant", "acme", "--type", "inquiry.created", "--source", "storefront", "--payload", "-", "--id", "evt_pub_1")
	require.NoError(t, err, out)
	require.Equal(t, envelope.StatusDuplicate, result(out).Status, "stdin, same id and content")

	out, err = run(t, ctx, "", "publish", "--url", st.URL(), "--tenant", "acme", "--type", "inquiry.created", "--source", "storefront", "--payload", `{"name":"Eve"}`, "--id", "evt_pub_1")
	require.ErrorIs(t, err, errSilent, "a rejection fails the command")
	r = result(out)
	require.Equal(t, envelope.StatusRejected, r.Status)
	require.Equal(t, envelope.CodeIdempotencyConflict, r.Error.Code)

	out, err = run(t, ctx, "", "publish", "--url", st.URL(), "--envelope", "@../../events/ingest/valid/cms-content-published.json")
	require.NoError(t, err, out)
	require.Equal(t, []string{"cache.purge"}, result(out).Topics)

	_, err = run(t, ctx, "", "publish", "--url", st.URL(), "--tenant", "acme")
	require.ErrorContains(t, err, "are required")
	_, err = run(t, ctx, "", "publish", "--url", st.URL(), "--tenant", "acme", "--type", "x.y", "--source", "cms", "--payload", "{nope")
	require.ErrorContains(t, err, "not valid JSON")
	_, err = run(t, ctx, "", "publish", "--url", st.URL(), "--envelope", "{}", "--tenant", "acme")
	require.ErrorContains(t, err, "--envelope is a whole envelope")
}
