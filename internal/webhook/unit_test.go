package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/lambdainvoke"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/webhook"
)

func TestResultStatus(t *testing.T) {
	t.Parallel()
	cases := []struct {
		res  envelope.Result
		want int
	}{
		{envelope.Result{Status: envelope.StatusEnqueued}, http.StatusOK},
		{envelope.Result{Status: envelope.StatusDuplicate}, http.StatusOK},
		{envelope.Result{Status: envelope.StatusUnrouted}, http.StatusOK},
		{envelope.Result{Status: envelope.StatusAccepted, PendingTopics: []string{"billing.events"}}, http.StatusServiceUnavailable},
		{envelope.Reject("e", &envelope.Error{Code: envelope.CodeInvalidType}), http.StatusBadRequest},
		{envelope.Reject("e", &envelope.Error{Code: envelope.CodeIdempotencyConflict}), http.StatusConflict},
		{envelope.Result{Status: envelope.StatusRejected}, http.StatusBadRequest},
		{envelope.Result{Status: "bogus"}, http.StatusBadGateway},
		{envelope.Result{}, http.StatusBadGateway},
	}
	for _, tc := range cases {
		code := ""
		if tc.res.Error != nil {
			code = string(tc.res.Error.Code)
		}
		require.Equal(t, tc.want, webhook.ResultStatus(tc.res), "%s %s", tc.res.Status, code)
	}
}

func TestIngestErrorStatus(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		want int
	}{
		{&lambdainvoke.Error{Kind: lambdainvoke.KindTimeout}, http.StatusServiceUnavailable},
		{&lambdainvoke.Error{Kind: lambdainvoke.KindThrottled}, http.StatusServiceUnavailable},
		{&lambdainvoke.Error{Kind: lambdainvoke.KindUnavailable}, http.StatusServiceUnavailable},
		{fmt.Errorf("wrapped: %w", &lambdainvoke.Error{Kind: lambdainvoke.KindThrottled}), http.StatusServiceUnavailable},
		{context.DeadlineExceeded, http.StatusServiceUnavailable},
		{&lambdainvoke.Error{Kind: lambdainvoke.KindFunction}, http.StatusBadGateway},
		{&lambdainvoke.Error{Kind: lambdainvoke.KindInvoke}, http.StatusBadGateway},
		{&lambdainvoke.Error{Kind: lambdainvoke.KindBadResult}, http.StatusBadGateway},
		{errors.New("in-process ingest: dynamodb down"), http.StatusBadGateway},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, webhook.IngestErrorStatus(tc.err), "%v", tc.err)
	}
}

func TestEncodeKeepsPayloadBytes(t *testing.T) {
	t.Parallel()
	payload := "{\n  \"url\": \"https://x.example/?a=1&b=<2>\",\n  \"name\": \"Umbrella — Corp\"\n}"
	ev := envelope.Event{ID: "evt_1", TenantID: "acme", Type: "stripe.invoice.paid", Source: "stripe",
		Timestamp: time.Unix(1764676800, 0).UTC(), Subject: "in_1", Payload: json.RawMessage(payload)}
	raw, err := webhook.Encode(ev)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"payload":`+payload+`}`, "verbatim: whitespace, & and < > kept")
	got, rerr := envelope.Parse(raw, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), envelope.DefaultLimits())
	require.Nil(t, rerr)
	require.Equal(t, payload, string(got.Payload))
	require.Equal(t, "in_1", got.Subject)
	require.Equal(t, ev.Timestamp, got.Timestamp)

	for _, bad := range []string{"", "[]", "null", `"x"`} {
		ev.Payload = json.RawMessage(bad)
		_, err := webhook.Encode(ev)
		require.Error(t, err, bad)
	}
}

func TestTenantMapValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, webhook.TenantMap{}.Validate())
	require.NoError(t, webhook.TenantMap{Accounts: map[string]string{"acct_1": "acme"}, Default: "globex"}.Validate())
	err := webhook.TenantMap{Accounts: map[string]string{"acct_1": "Acme Corp", "": "x"}, Default: "-bad"}.Validate()
	require.ErrorContains(t, err, `"Acme Corp"`)
	require.ErrorContains(t, err, "empty account key")
	require.ErrorContains(t, err, `"-bad"`)

	var m webhook.TenantMap
	require.NoError(t, json.Unmarshal([]byte(`{"accounts":{"acct_1":"acme"},"default":"globex"}`), &m))
	tenant, ok := m.Account("acct_1")
	require.True(t, ok)
	require.Equal(t, "acme", tenant)
	_, ok = m.Account("")
	require.False(t, ok)
}

func TestDeliveryHeader(t *testing.T) {
	t.Parallel()
	d := webhook.Delivery{Headers: map[string]string{"stripe-signature": "a", "X-Mixed": "b"}}
	require.Equal(t, "a", d.Header("Stripe-Signature"))
	require.Equal(t, "b", d.Header("x-mixed"))
	require.Empty(t, d.Header("missing"))
}

// memStore is a secret.Store the test edits and can make fail.
