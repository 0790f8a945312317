package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/invoke"
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
		{&invoke.Error{Kind: invoke.KindTimeout}, http.StatusServiceUnavailable},
		{&invoke.Error{Kind: invoke.KindThrottled}, http.StatusServiceUnavailable},
		{&invoke.Error{Kind: invoke.KindUnavailable}, http.StatusServiceUnavailable},
		{fmt.Errorf("wrapped: %w", &invoke.Error{Kind: invoke.KindThrottled}), http.StatusServiceUnavailable},
		{context.DeadlineExceeded, http.StatusServiceUnavailable},
		{&invoke.Error{Kind: invoke.KindFunction}, http.StatusBadGateway},
		{&invoke.Error{Kind: invoke.KindInvoke}, http.StatusBadGateway},
		{&invoke.Error{Kind: invoke.KindBadResult}, http.StatusBadGateway},
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

// memStore is a SecretStore the test edits and can make fail.
type memStore struct {
	mu      sync.Mutex
	secrets []string
	err     error
	loads   int
}

func (s *memStore) Load(context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loads++
	return append([]string(nil), s.secrets...), s.err
}

func (s *memStore) set(err error, secrets ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secrets, s.err = secrets, err
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestKeyringRefreshes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := &fakeClock{t: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	st := &memStore{secrets: []string{"whsec_a", ""}}
	k, err := webhook.NewKeyring(ctx, st, webhook.KeyringOptions{Refresh: 5 * time.Minute, MinReload: 30 * time.Second, Now: clk.Now})
	require.NoError(t, err)
	require.Equal(t, []string{"whsec_a"}, k.Active(ctx), "empty entries are dropped")

	st.set(nil, "whsec_b", "whsec_a")
	clk.Advance(4 * time.Minute)
	require.Equal(t, []string{"whsec_a"}, k.Active(ctx), "cached within the refresh interval")
	clk.Advance(time.Minute)
	require.Equal(t, []string{"whsec_b", "whsec_a"}, k.Active(ctx), "reloaded once stale")
	require.Equal(t, 2, st.loads)

	// A failing store keeps the last good secrets and is retried after
	// MinReload, not on every delivery.
	st.set(errors.New("secretsmanager: throttled"))
	clk.Advance(5 * time.Minute)
	require.Equal(t, []string{"whsec_b", "whsec_a"}, k.Active(ctx))
	require.Equal(t, []string{"whsec_b", "whsec_a"}, k.Active(ctx))
	require.Equal(t, 3, st.loads)
	clk.Advance(30 * time.Second)
	st.set(nil) // an emptied secret is an error too: keep the old
	require.Equal(t, []string{"whsec_b", "whsec_a"}, k.Active(ctx))
	require.Equal(t, 4, st.loads)
	clk.Advance(30 * time.Second)
	st.set(nil, "whsec_c")
	require.Equal(t, []string{"whsec_c"}, k.Active(ctx))

	// Reload: rate-limited, reports whether the set changed.
	secrets, changed := k.Reload(ctx)
	require.False(t, changed, "just loaded: rate-limited")
	require.Equal(t, []string{"whsec_c"}, secrets)
	clk.Advance(30 * time.Second)
	_, changed = k.Reload(ctx)
	require.False(t, changed, "same secrets")
	st.set(nil, "whsec_d")
	clk.Advance(30 * time.Second)
	secrets, changed = k.Reload(ctx)
	require.True(t, changed)
	require.Equal(t, []string{"whsec_d"}, secrets)
}

func TestKeyringFailsColdStart(t *testing.T) {
	t.Parallel()
	_, err := webhook.NewKeyring(context.Background(), &memStore{err: errors.New("AccessDeniedException")}, webhook.KeyringOptions{})
	require.ErrorContains(t, err, "AccessDeniedException")
	_, err = webhook.NewKeyring(context.Background(), &memStore{secrets: []string{""}}, webhook.KeyringOptions{})
	require.ErrorContains(t, err, "no secret")
}

func TestKeyringConcurrentUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := &fakeClock{t: time.Now()}
	st := &memStore{secrets: []string{"whsec_a"}}
	k, err := webhook.NewKeyring(ctx, st, webhook.KeyringOptions{Refresh: time.Minute, MinReload: time.Second, Now: clk.Now})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				if i == 0 && j%10 == 0 {
					clk.Advance(time.Minute)
					st.set(nil, fmt.Sprintf("whsec_%d", j))
				}
				s := k.Active(ctx)
				if len(s) != 1 || !strings.HasPrefix(s[0], "whsec_") {
					t.Errorf("bad secrets %v", s)
				}
				k.Reload(ctx)
			}
		})
	}
	wg.Wait()
}
