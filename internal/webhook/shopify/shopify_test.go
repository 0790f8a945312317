package shopify_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/secret"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/shopify"
	"github.com/siteswarm/eventplatform/internal/webhook/webhooktest"
)

const (
	secretA = "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"
	secretB = "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"
)

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// sign is Shopify's documented HMAC, written here apart from the provider:
// the base64 of HMAC-SHA256 of the raw body under the app's client secret.
func sign(body []byte, secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func headers(topic string, body []byte, secret string) map[string]string {
	return map[string]string{
		"Content-Type":           "application/json",
		"X-Shopify-Topic":        topic,
		"X-Shopify-Hmac-Sha256":  sign(body, secret),
		"X-Shopify-Shop-Domain":  "acme.myshopify.com",
		"X-Shopify-Webhook-Id":   "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043",
		"X-Shopify-Triggered-At": "2026-12-02T12:58:13.403541Z",
		"X-Shopify-Event-Id":     "98880550-7158-44d4-b7cd-2c97c8a091b5",
		"X-Shopify-API-Version":  "2026-10",
	}
}

func sample(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "events", "shopify", name))
	require.NoError(tb, err)
	return b
}

var tenants = webhook.TenantMap{Accounts: map[string]string{"acme.myshopify.com": "acme"}}

func provider(tb testing.TB) webhook.Provider {
	tb.Helper()
	p, err := shopify.Declaration.New(webhook.Setup{Secrets: secret.List{secretA}, Tenants: tenants, Now: testkit.NewClock(now).Now})
	require.NoError(tb, err)
	return p
}

func suite(tb testing.TB) webhooktest.Suite {
	return webhooktest.Suite{
		Declaration: shopify.Declaration,
		Setup:       webhook.Setup{Tenants: tenants},
		Body:        sample(tb, "orders.create.json"),
		Sign: func(body []byte, secret string, _ time.Time) map[string]string {
			return headers("orders/create", body, secret)
		},
		Signature: []string{"X-Shopify-Hmac-Sha256"},
		SecretA:   secretA, SecretB: secretB, Now: now,
	}
}

func TestVerifier(t *testing.T) {
	t.Parallel()
	webhooktest.VerifierSuite(t, suite(t))
}

// openssl computes the HMAC as a third implementation: a delivery it signs
// verifies.
func TestVerifyWhatOpenSSLSigns(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl is not installed")
	}
	body := sample(t, "orders.create.json")
	cmd := exec.Command("openssl", "dgst", "-sha256", "-hmac", secretA, "-binary")
	cmd.Stdin = bytes.NewReader(body)
	mac, err := cmd.Output()
	require.NoError(t, err)
	h := headers("orders/create", body, secretB)
	h["X-Shopify-Hmac-Sha256"] = base64.StdEncoding.EncodeToString(mac)
	require.NoError(t, provider(t).Verify(context.Background(), webhooktest.Delivery(body, h)))
}

func TestVerifyRefusesMalformedHMACs(t *testing.T) {
	t.Parallel()
	body := sample(t, "orders.create.json")
	good := sign(body, secretA)
	for name, tc := range map[string]struct {
		header string
		want   envelope.Code
	}{
		"hex instead of base64": {"6f0e2a41b9c7d35e8a1f4b2c9d0e7a636f0e2a41b9c7d35e8a1f4b2c9d0e7a63", webhook.CodeSignatureMalformed},
		"not base64":            {"***", webhook.CodeSignatureMalformed},
		"truncated":             {good[:20], webhook.CodeSignatureMalformed},
		"url-safe alphabet":     {strings.NewReplacer("+", "-", "/", "_").Replace(good) + "-_", webhook.CodeSignatureMalformed},
		"blank":                 {"  ", webhook.CodeSignatureMissing},
	} {
		h := headers("orders/create", body, secretA)
		h["X-Shopify-Hmac-Sha256"] = tc.header
		require.Equal(t, tc.want, webhooktest.Code(t, provider(t).Verify(context.Background(), webhooktest.Delivery(body, h))), name)
	}
}

func TestCanonicalizeMapsTheDelivery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file, topic, typ, subject string
	}{
		{"orders.create.json", "orders/create", "shopify.orders.create", "gid://shopify/Order/5842610143411"},
		{"customers.create.json", "customers/create", "shopify.customers.create", "gid://shopify/Customer/7314203246771"},
		{"customers.redact.json", "customers/redact", "shopify.customers.redact", ""},
	} {
		body := sample(t, tc.file)
		d := webhooktest.Delivery(body, headers(tc.topic, body, secretA))
		d.ReceivedAt = now.Add(4 * time.Hour) // a retry, hours later
		ev, err := provider(t).Canonicalize(context.Background(), d)
		require.NoError(t, err, tc.file)
		require.Equal(t, "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", ev.ID)
		require.Equal(t, tc.typ, ev.Type)
		require.Equal(t, "shopify", ev.Source)
		require.Equal(t, "acme", ev.TenantID, "the shop through the map")
		require.Equal(t, tc.subject, ev.Subject)
		require.Equal(t, time.Date(2026, 12, 2, 12, 58, 13, 403541000, time.UTC), ev.Timestamp, "X-Shopify-Triggered-At is kept: a retry has the original time")
		require.Equal(t, body, []byte(ev.Payload))
		raw, err := webhook.Encode(ev)
		require.NoError(t, err)
		_, rerr := envelope.Parse(raw, now, envelope.DefaultLimits())
		require.Nil(t, rerr)
	}
}

func TestCanonicalizeRefuses(t *testing.T) {
	t.Parallel()
	body := sample(t, "orders.create.json")
	for name, tc := range map[string]struct {
		body    string
		header  [2]string
		status  int
		code    envelope.Code
		message string
	}{
		"unmapped shop":       {string(body), [2]string{"X-Shopify-Shop-Domain", "globex.myshopify.com"}, 422, webhook.CodeUnknownAccount, `shop "globex.myshopify.com" is not mapped`},
		"not a shop domain":   {string(body), [2]string{"X-Shopify-Shop-Domain", "acme.example.com"}, 400, webhook.CodeInvalidEvent, "myshopify.com"},
		"no shop":             {string(body), [2]string{"X-Shopify-Shop-Domain", ""}, 400, webhook.CodeInvalidEvent, "X-Shopify-Shop-Domain"},
		"no webhook id":       {string(body), [2]string{"X-Shopify-Webhook-Id", ""}, 400, webhook.CodeInvalidEvent, "X-Shopify-Webhook-Id"},
		"no topic":            {string(body), [2]string{"X-Shopify-Topic", ""}, 400, webhook.CodeInvalidEvent, "X-Shopify-Topic"},
		"topic not a topic":   {string(body), [2]string{"X-Shopify-Topic", "Orders Create"}, 400, webhook.CodeInvalidEvent, "orders/create"},
		"not JSON":            {`{"id":`, [2]string{}, 400, webhook.CodeInvalidEvent, "not a Shopify webhook JSON object"},
		"a GraphQL array":     {`[{"id":1}]`, [2]string{}, 400, webhook.CodeInvalidEvent, "JSON object is expected"},
		"not UTF-8":           {"{\"id\":\"\xfe\"}", [2]string{}, 400, webhook.CodeInvalidEvent, "UTF-8"},
		"upper-case shop ok?": {string(body), [2]string{"X-Shopify-Shop-Domain", "ACME.myshopify.com"}, 0, "", ""},
	} {
		h := headers("orders/create", []byte(tc.body), secretA)
		if tc.header[0] != "" {
			h[tc.header[0]] = tc.header[1]
		}
		ev, err := provider(t).Canonicalize(context.Background(), webhooktest.Delivery([]byte(tc.body), h))
		if tc.status == 0 {
			require.NoError(t, err, name)
			require.Equal(t, "acme", ev.TenantID, "%s: domains are case-insensitive", name)
			continue
		}
		var e *webhook.Error
		require.True(t, errors.As(err, &e), "%s: %v", name, err)
		require.Equal(t, tc.status, e.Status, name)
		require.Equal(t, tc.code, e.Code, name)
		require.Contains(t, e.Message, tc.message, name)
	}
}

// No default tenant: a shop that installs the app is never filed under
// another's tenant.
func TestADefaultTenantIsRefused(t *testing.T) {
	t.Parallel()
	_, err := shopify.Declaration.New(webhook.Setup{Secrets: secret.List{secretA}, Tenants: webhook.TenantMap{Default: "acme"}})
	require.ErrorContains(t, err, "map each shop domain")
}

// A missing X-Shopify-Triggered-At leaves the receipt time.
func TestTimestampWithoutTriggeredAt(t *testing.T) {
	t.Parallel()
	body := sample(t, "orders.create.json")
	h := headers("orders/create", body, secretA)
	delete(h, "X-Shopify-Triggered-At")
	d := webhooktest.Delivery(body, h)
	d.ReceivedAt = now
	ev, err := provider(t).Canonicalize(context.Background(), d)
	require.NoError(t, err)
	require.Equal(t, now, ev.Timestamp)
}

// Shopify's rules: ids are global, a retry is the original payload
// (content identity), and the customer is the owner and the FIFO group.
func TestRules(t *testing.T) {
	t.Parallel()
	r := shopify.Declaration.Rules
	require.True(t, r.GlobalIDs())
	require.Empty(t, r.IdentityScheme())
	const jane = "gid://shopify/Customer/7314203246771"
	for _, f := range []string{"orders.create.json", "customers.create.json", "customers.redact.json"} {
		require.Equal(t, jane, r.Owner(sample(t, f)), f)
	}
	require.Equal(t, "gid://shopify/Customer/9", r.Owner([]byte(`{"id":1,"customer_id":9}`)))
	require.Empty(t, r.Owner([]byte(`{"id":1,"customer":null}`)))
	require.Empty(t, r.Owner([]byte(`{"customer":{"id":"x"}}`)))
	require.Equal(t, jane, r.OrderingKey(envelope.Event{Subject: "gid://shopify/Order/5842610143411", Payload: sample(t, "orders.create.json")}), "a customer's orders are one sequence")
	require.Equal(t, "gid://shopify/Product/1", r.OrderingKey(envelope.Event{Subject: "gid://shopify/Product/1", Payload: []byte(`{"id":1}`)}))
}

func TestCheckSecrets(t *testing.T) {
	t.Parallel()
	require.NoError(t, shopify.CheckSecrets([]string{secretA}))
	require.Error(t, shopify.CheckSecrets(nil))
	err := shopify.CheckSecrets([]string{secretA, ""})
	require.ErrorContains(t, err, "#2")
}
