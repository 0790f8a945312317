package deliver_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/handlers/deliver"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/secret"
)

// subscriber is a local test server that records deliveries and answers
// what the test says.
type subscriber struct {
	*httptest.Server
	mu       sync.Mutex
	requests []delivery
	answer   func(w http.ResponseWriter, r *http.Request)
}

type delivery struct {
	header http.Header
	body   []byte
}

func newSubscriber(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) *subscriber {
	s := &subscriber{answer: answer}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.requests = append(s.requests, delivery{header: r.Header.Clone(), body: body})
		s.mu.Unlock()
		if s.answer != nil {
			s.answer(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *subscriber) got() []delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]delivery(nil), s.requests...)
}

var whsec = whsecOf("topic-signing-secret-for-tests")

func message() consume.Message {
	return consume.Message{
		Topic: "billing.events", Key: "evt_1NqZ", MessageID: "m-1", ReceiveCount: 1,
		Event: envelope.Event{
			SchemaVersion: 1, ID: "evt_1NqZ", TenantID: "acme", Type: "stripe.invoice.paid", Source: "stripe",
			Timestamp: time.Date(2026, 12, 2, 11, 59, 0, 0, time.UTC),
			Payload:   json.RawMessage(`{"invoice":"in_1","amount_paid":4200}`),
		},
	}
}

func deliverer(url string) *deliver.Deliverer {
	return &deliver.Deliverer{URL: url, Secrets: secret.List{whsec}, Timeout: 2 * time.Second, Log: logging.Discard()}
}

// Issue test 6 (signature): the delivery verifies with the documented
// scheme and carries the envelope as its body.
func TestDeliverySignatureVerifiesWithTheDocumentedScheme(t *testing.T) {
	t.Parallel()
	sub := newSubscriber(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	d := deliverer(sub.URL + "/hooks")
	before := time.Now().Add(-time.Second)
	require.NoError(t, d.Handle(context.Background(), message()))

	got := sub.got()
	require.Len(t, got, 1)
	h, body := got[0].header, got[0].body
	require.True(t, verifyIndependently(t, whsec, h, body), "signature %q", h.Get("webhook-signature"))
	require.NoError(t, deliver.Verify(whsec, h, body, deliver.DefaultTolerance, time.Now()))
	require.Equal(t, "evt_1NqZ", h.Get("webhook-id"), "webhook-id is the event's storage key (a provider's event: its id)")
	sec, err := strconv.ParseInt(h.Get("webhook-timestamp"), 10, 64)
	require.NoError(t, err)
	require.WithinRange(t, time.Unix(sec, 0), before.Truncate(time.Second), time.Now())
	require.Equal(t, "application/json", h.Get("Content-Type"))

	ev, rerr := envelope.ParseMessage(body)
	require.Nil(t, rerr, "the body is a platform envelope")
	require.Equal(t, "evt_1NqZ", ev.ID)
	require.JSONEq(t, `{"invoice":"in_1","amount_paid":4200}`, string(ev.Payload))

	// A tampered body does not verify.
	require.False(t, verifyIndependently(t, whsec, h, append(body[:len(body)-1:len(body)-1], ' ', '}')))
}

// Issue test 6 (answers): Retry-After is honoured, 410 is permanent, a
// timeout is transient; and the rest of the status mapping.
func TestDeliveryAnswersMapToRetryIntent(t *testing.T) {
	t.Parallel()
	now := time.Now()
	cases := []struct {
		name       string
		status     int
		header     map[string]string
		kind       consume.Kind
		code       string
		retryAfter time.Duration
	}{
		{"200", 200, nil, -1, "", 0},
		{"202", 202, nil, -1, "", 0},
		{"503 Retry-After 7", 503, map[string]string{"Retry-After": "7"}, consume.KindTransient, "", 7 * time.Second},
		{"429 Retry-After date", 429, map[string]string{"Retry-After": now.Add(90 * time.Second).UTC().Format(http.TimeFormat)}, consume.KindTransient, "", 90 * time.Second},
		{"500", 500, nil, consume.KindTransient, "", 0},
		{"502 junk Retry-After", 502, map[string]string{"Retry-After": "soon"}, consume.KindTransient, "", 0},
		{"408", 408, nil, consume.KindTransient, "", 0},
		{"425", 425, nil, consume.KindTransient, "", 0},
		{"410", 410, nil, consume.KindPermanent, deliver.CodeRejected, 0},
		{"400", 400, nil, consume.KindPermanent, deliver.CodeRejected, 0},
		{"401", 401, nil, consume.KindPermanent, deliver.CodeRejected, 0},
		{"404", 404, nil, consume.KindPermanent, deliver.CodeRejected, 0},
		{"301 not followed", 301, map[string]string{"Location": "https://elsewhere.example.com/hook?token=secret"}, consume.KindPermanent, deliver.CodeRedirected, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sub := newSubscriber(t, func(w http.ResponseWriter, _ *http.Request) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte("answer from the subscriber"))
			})
			err := deliverer(sub.URL).Handle(context.Background(), message())
			if tc.kind < 0 {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			kind, code, after := consume.Classify(err)
			require.Equal(t, tc.kind, kind)
			require.Equal(t, tc.code, code)
			require.InDelta(t, tc.retryAfter.Seconds(), after.Seconds(), 2, "retry-after")
			require.Contains(t, err.Error(), strconv.Itoa(tc.status))
			require.Contains(t, err.Error(), "answer from the subscriber", "the operator sees what the subscriber said")
			require.NotContains(t, err.Error(), "token=secret")
			require.Len(t, sub.got(), 1, "redirects are never followed")
		})
	}
}

func TestDeliveryTimeoutAndNetworkErrorsAreTransient(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	slow := newSubscriber(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	d := deliverer(slow.URL + "/hook?token=do-not-log")
	d.Timeout = 200 * time.Millisecond
	start := time.Now()
	err := d.Handle(context.Background(), message())
	require.Error(t, err)
	require.Less(t, time.Since(start), 5*time.Second, "the request timeout bounds the delivery")
	require.False(t, consume.IsPermanent(err), "a timeout is transient: %v", err)
	require.Contains(t, err.Error(), "no answer within 200ms")
	require.NotContains(t, err.Error(), "do-not-log", "query strings may carry tokens and are never recorded")

	// Nothing listening.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	err = deliverer("http://"+addr+"/hook").Handle(context.Background(), message())
	require.Error(t, err)
	require.False(t, consume.IsPermanent(err))
}

// secretsFunc counts loads and can fail them.
type secretsFunc struct {
	loads atomic.Int32
	fn    func(n int32) ([]string, error)
}

func (s *secretsFunc) Load(context.Context) ([]string, error) { return s.fn(s.loads.Add(1)) }

func TestSigningSecretsAreCachedAndRefreshed(t *testing.T) {
	t.Parallel()
	sub := newSubscriber(t, nil)
	rotated := whsecOf("rotated-secret-0123456789")
	src := &secretsFunc{fn: func(n int32) ([]string, error) {
		switch n {
		case 1:
			return []string{whsec}, nil
		case 2:
			return nil, errors.New("secrets manager unavailable")
		}
		return []string{rotated, whsec}, nil
	}}
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	ctx := context.Background()
	keys, err := secret.NewKeyring(ctx, src, secret.KeyringOptions{Refresh: 5 * time.Minute, MinReload: time.Minute, Now: func() time.Time { return time.Unix(0, now.Load()) }})
	require.NoError(t, err)
	d := deliverer(sub.URL)
	d.Secrets = keys

	require.NoError(t, d.Handle(ctx, message()))
	require.NoError(t, d.Handle(ctx, message()))
	require.Equal(t, int32(1), src.loads.Load(), "read once per TTL")

	now.Add(int64(6 * time.Minute))
	require.NoError(t, d.Handle(ctx, message()), "a failed refresh keeps signing with the last good secrets")
	require.Equal(t, int32(2), src.loads.Load())

	now.Add(int64(2 * time.Minute))
	require.NoError(t, d.Handle(ctx, message()))
	require.Equal(t, int32(3), src.loads.Load(), "the failed refresh is retried after a minute")
	last := sub.got()[3]
	require.True(t, verifyIndependently(t, rotated, last.header, last.body), "signed with the rotated secret")
	require.True(t, verifyIndependently(t, whsec, last.header, last.body), "and still with the old one during the rotation")

	// No secrets at all: transient (a configuration error an operator fixes,
	// after which the retries go through).
	d2 := deliverer(sub.URL)
	d2.Secrets = secret.List(nil)
	err = d2.Handle(ctx, message())
	require.Error(t, err)
	require.False(t, consume.IsPermanent(err))
}

// webhook-id is the event's storage key: an internal producer's id under
// its tenant, so two tenants' events of one id are two webhook-ids (each
// signed under its own), and a message without a key (sent before keys
// existed) falls back to the bare id it is stored under.
func TestWebhookIDIsTheStorageKey(t *testing.T) {
	t.Parallel()
	sub := newSubscriber(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	d := deliverer(sub.URL + "/hooks")
	for _, tenant := range []string{"acme", "globex"} {
		m := message()
		m.Event.ID, m.Event.TenantID, m.Event.Source, m.Key = "ord-1", tenant, "shop", tenant+"/ord-1"
		require.NoError(t, d.Handle(context.Background(), m))
	}
	legacy := message()
	legacy.Key = ""
	require.NoError(t, d.Handle(context.Background(), legacy))
	got := sub.got()
	require.Len(t, got, 3)
	for i, want := range []string{"acme/ord-1", "globex/ord-1", "evt_1NqZ"} {
		require.Equal(t, want, got[i].header.Get("webhook-id"))
		require.NoError(t, deliver.Verify(whsec, got[i].header, got[i].body, deliver.DefaultTolerance, time.Now()), "signed over its webhook-id")
	}
}
