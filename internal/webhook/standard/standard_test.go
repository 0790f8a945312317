package standard_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/secret"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/standard"
	"github.com/siteswarm/eventplatform/internal/webhook/webhooktest"
)

var (
	secretA = "whsec_" + base64.StdEncoding.EncodeToString([]byte("standard-webhooks-key-a-32-bytes"))
	secretB = "whsec_" + base64.StdEncoding.EncodeToString([]byte("standard-webhooks-key-b-32-bytes"))
	// otherSource's secret: a sender holding it must never post as "crm".
	secretOther = "whsec_" + base64.StdEncoding.EncodeToString([]byte("another-senders-key-of-32-bytes!"))
)

// now is the wall clock: the reference library's Verify, which the tests
// check the library's own deliveries with, reads it.
var now = time.Now().UTC().Truncate(time.Second)

// sign signs with the Standard Webhooks reference library, the sender of
// the spec's own test suite: the headers a conforming sender puts on a
// delivery. Its secrets are the tests' own, valid ones (a failure is the
// test's bug: it panics).
func sign(_ testing.TB, id string, body []byte, secret string, at time.Time) map[string]string {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		panic(err)
	}
	sig, err := wh.Sign(id, at, body)
	if err != nil {
		panic(err)
	}
	return map[string]string{
		"Content-Type":                          "application/json",
		standardwebhooks.HeaderWebhookID:        id,
		standardwebhooks.HeaderWebhookTimestamp: strconv.FormatInt(at.Unix(), 10),
		standardwebhooks.HeaderWebhookSignature: sig,
	}
}

func sample(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "events", "standard", name))
	require.NoError(tb, err)
	return b
}

var tenants = webhook.TenantMap{Accounts: map[string]string{"crm": "acme", "billing": "globex"}}

func provider(tb testing.TB, clk *testkit.Clock) webhook.Provider {
	tb.Helper()
	p, err := standard.Declaration.New(webhook.Setup{
		Tenants: tenants, Now: clk.Now,
		Source: func(source string) (webhook.Secrets, bool) {
			switch source {
			case "crm":
				return secret.List{secretA}, true
			case "billing", "unmapped":
				return secret.List{secretOther}, true
			}
			return nil, false
		},
	})
	require.NoError(tb, err)
	return p
}

func delivery(source string, body []byte, headers map[string]string) webhook.Delivery {
	d := webhooktest.Delivery(body, headers)
	d.Source = source
	return d
}

func suite(tb testing.TB) webhooktest.Suite {
	return webhooktest.Suite{
		Declaration: standard.Declaration,
		Setup:       webhook.Setup{Tenants: tenants},
		Source:      "crm",
		Body:        sample(tb, "contact.created.json"),
		Sign: func(body []byte, secret string, at time.Time) map[string]string {
			return sign(tb, "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", body, secret, at)
		},
		Signature: []string{"webhook-signature"},
		SecretA:   secretA, SecretB: secretB, Now: now,
	}
}

func TestVerifier(t *testing.T) {
	t.Parallel()
	webhooktest.VerifierSuite(t, suite(t))
}

// The reference library's own verifier accepts what the provider's Sign
// (evp standard send) puts on a delivery.
func TestSignIsWhatTheReferenceLibraryVerifies(t *testing.T) {
	t.Parallel()
	body := sample(t, "invoice.payment_failed.json")
	h := standard.Declaration.Sign(webhook.Signing{Body: body, ID: "msg_1", Secret: secretA, At: now})
	wh, err := standardwebhooks.NewWebhook(secretA)
	require.NoError(t, err)
	hdr := http.Header{}
	for k, v := range h {
		hdr.Set(k, v)
	}
	require.NoError(t, wh.Verify(body, hdr))
}

func TestVerifyMatrix(t *testing.T) {
	t.Parallel()
	body := sample(t, "contact.created.json")
	good := sign(t, "msg_1", body, secretA, now)
	with := func(k, v string) map[string]string {
		h := map[string]string{}
		for hk, hv := range good {
			h[hk] = hv
		}
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
		return h
	}
	libSig := good["webhook-signature"]
	svix := map[string]string{"svix-id": "msg_1", "svix-timestamp": good["webhook-timestamp"], "svix-signature": libSig}
	for name, tc := range map[string]struct {
		source  string
		headers map[string]string
		want    envelope.Code
	}{
		"valid":                                 {"crm", good, ""},
		"the svix-* spelling":                   {"crm", svix, ""},
		"several signatures, the last matching": {"crm", with("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(make([]byte, 32))+" v1a,c2lnbmF0dXJl "+libSig), ""},
		"several signatures, none matching":     {"crm", with("webhook-signature", sign(t, "msg_1", body, secretB, now)["webhook-signature"]+" "+sign(t, "msg_1", body, secretOther, now)["webhook-signature"]), webhook.CodeSignatureMismatch},
		"another source's secret":               {"billing", good, webhook.CodeSignatureMismatch},
		"the id is signed":                      {"crm", with("webhook-id", "msg_2"), webhook.CodeSignatureMismatch},
		"only an asymmetric v1a signature":      {"crm", with("webhook-signature", "v1a,c2lnbmF0dXJl"), webhook.CodeSignatureMalformed},
		"not version,signature":                 {"crm", with("webhook-signature", "garbage"), webhook.CodeSignatureMalformed},
		"v1 not base64":                         {"crm", with("webhook-signature", "v1,***"), webhook.CodeSignatureMalformed},
		"no signature":                          {"crm", with("webhook-signature", ""), webhook.CodeSignatureMissing},
		"no id":                                 {"crm", with("webhook-id", ""), webhook.CodeSignatureMalformed},
		"no timestamp":                          {"crm", with("webhook-timestamp", ""), webhook.CodeSignatureMalformed},
		"timestamp not a number":                {"crm", with("webhook-timestamp", "yesterday"), webhook.CodeSignatureMalformed},
		"timestamp 299 s old":                   {"crm", sign(t, "msg_1", body, secretA, now.Add(-299*time.Second)), ""},
		"timestamp 301 s old":                   {"crm", sign(t, "msg_1", body, secretA, now.Add(-301*time.Second)), webhook.CodeSignatureExpired},
		"timestamp 299 s in the future":         {"crm", sign(t, "msg_1", body, secretA, now.Add(299*time.Second)), ""},
		"timestamp 301 s in the future":         {"crm", sign(t, "msg_1", body, secretA, now.Add(301*time.Second)), webhook.CodeSignatureExpired},
		"timestamp replaced (it is signed)":     {"crm", with("webhook-timestamp", strconv.FormatInt(now.Add(time.Second).Unix(), 10)), webhook.CodeSignatureMismatch},
	} {
		err := provider(t, testkit.NewClock(now)).Verify(context.Background(), delivery(tc.source, body, tc.headers))
		require.Equal(t, tc.want, webhooktest.Code(t, err), name)
	}
}

func TestUnknownSourceIs404(t *testing.T) {
	t.Parallel()
	body := sample(t, "contact.created.json")
	for _, source := range []string{"nobody", "", "CRM", "../crm", "crm/x"} {
		err := provider(t, testkit.NewClock(now)).Verify(context.Background(), delivery(source, body, sign(t, "msg_1", body, secretA, now)))
		var e *webhook.Error
		require.True(t, errors.As(err, &e), "%q: %v", source, err)
		require.Equal(t, 404, e.Status, source)
		require.Equal(t, webhook.CodeUnknownSource, e.Code, source)
	}
}

func TestCanonicalizeMapsTheMessage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file, typ, subject string
		at                 time.Time
	}{
		{"contact.created.json", "standard.crm.contact.created", "ct_01JE3M8ZKQ5W9Y7T2B4N6R0XHC", time.Date(2026, 12, 2, 11, 59, 47, 114000000, time.UTC)},
		{"invoice.payment_failed.json", "standard.crm.invoice.payment_failed", "inv_01JE3MB4D7HYV1N0S8C2G5K3QF", time.Date(2026, 12, 2, 12, 1, 3, 560000000, time.UTC)},
	} {
		body := sample(t, tc.file)
		ev, err := provider(t, testkit.NewClock(now)).Canonicalize(context.Background(), delivery("crm", body, sign(t, "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", body, secretA, now)))
		require.NoError(t, err, tc.file)
		require.Equal(t, "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", ev.ID)
		require.Equal(t, tc.typ, ev.Type)
		require.Equal(t, "standard", ev.Source)
		require.Equal(t, "acme", ev.TenantID, "the source's tenant")
		require.Equal(t, tc.subject, ev.Subject)
		require.Equal(t, tc.at, ev.Timestamp, "the message's own timestamp")
		require.Equal(t, body, []byte(ev.Payload))
		raw, err := webhook.Encode(ev)
		require.NoError(t, err)
		_, rerr := envelope.Parse(raw, time.Now(), envelope.DefaultLimits())
		require.Nil(t, rerr)
	}
}

func TestCanonicalizeTypesAndRefusals(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		source, body string
		typ          string // when accepted
		status       int
		code         envelope.Code
	}{
		"type with - and capitals":     {"crm", `{"type":"Invoice.Payment-Failed","data":{}}`, "standard.crm.invoice.payment_failed", 0, ""},
		"data.id a number":             {"crm", `{"type":"a.b","data":{"id":42}}`, "standard.crm.a.b", 0, ""},
		"no timestamp: the header's":   {"billing", `{"type":"order.paid"}`, "standard.billing.order.paid", 0, ""},
		"no type":                      {"crm", `{"data":{}}`, "", 400, webhook.CodeInvalidEvent},
		"type not a string":            {"crm", `{"type":7}`, "", 400, webhook.CodeInvalidEvent},
		"type with a space":            {"crm", `{"type":"order paid"}`, "", 400, webhook.CodeInvalidEvent},
		"type ending with a dot":       {"crm", `{"type":"order."}`, "", 400, webhook.CodeInvalidEvent},
		"not JSON":                     {"crm", `{"type":`, "", 400, webhook.CodeInvalidEvent},
		"an unmapped source's message": {"unmapped", `{"type":"a.b"}`, "", 422, webhook.CodeTenantUnresolved},
	} {
		body := []byte(tc.body)
		ev, err := provider(t, testkit.NewClock(now)).Canonicalize(context.Background(), delivery(tc.source, body, sign(t, "msg_3", body, secretA, now)))
		if tc.status == 0 {
			require.NoError(t, err, name)
			require.Equal(t, tc.typ, ev.Type, name)
			continue
		}
		var e *webhook.Error
		require.True(t, errors.As(err, &e), "%s: %v", name, err)
		require.Equal(t, tc.status, e.Status, name)
		require.Equal(t, tc.code, e.Code, name)
		require.Equal(t, "msg_3", e.EventID, name)
	}
	body := []byte(`{"type":"order.paid"}`)
	ev, err := provider(t, testkit.NewClock(now)).Canonicalize(context.Background(), delivery("billing", body, sign(t, "msg_4", body, secretOther, now)))
	require.NoError(t, err)
	require.Equal(t, now, ev.Timestamp, "without the message's timestamp: webhook-timestamp")
}

func TestSetupRefusesADefaultTenant(t *testing.T) {
	t.Parallel()
	_, err := standard.Declaration.New(webhook.Setup{Tenants: webhook.TenantMap{Default: "acme"}, Source: func(string) (webhook.Secrets, bool) { return nil, false }})
	require.ErrorContains(t, err, "every source names its own tenant")
}

// Standard Webhooks' rules: webhook-id is the sender's, so it is scoped by
// tenant; retries resend the message (content identity).
func TestRules(t *testing.T) {
	t.Parallel()
	r := standard.Declaration.Rules
	require.False(t, r.GlobalIDs())
	require.Empty(t, r.IdentityScheme())
	require.Empty(t, r.Owner(sample(t, "contact.created.json")))
	require.Equal(t, "ct_1", r.OrderingKey(envelope.Event{Subject: "ct_1"}))
}

func TestCheckSecrets(t *testing.T) {
	t.Parallel()
	require.NoError(t, standard.CheckSecrets([]string{secretA, secretB}))
	require.Error(t, standard.CheckSecrets(nil))
	for _, bad := range []string{"sk_live_abc", "whsec_***", "whsec_" + base64.StdEncoding.EncodeToString([]byte("short"))} {
		err := standard.CheckSecrets([]string{secretA, bad})
		require.ErrorContains(t, err, "#2", bad)
		require.NotContains(t, err.Error(), bad, "errors never quote a secret")
	}
}
