package github_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/secret"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/github"
	"github.com/siteswarm/eventplatform/internal/webhook/webhooktest"
)

const (
	secretA = "gh-hook-secret-a-8f1d0c"
	secretB = "gh-hook-secret-b-27e94a"
)

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// sign is GitHub's documented signature, written here apart from the
// provider: X-Hub-Signature-256 = "sha256=" + hex(HMAC-SHA256(secret,
// body)), computed over the payload bytes as sent.
func sign(body []byte, secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func headers(event, delivery string, body []byte, secret string) map[string]string {
	return map[string]string{
		"Content-Type":        "application/json",
		"X-GitHub-Event":      event,
		"X-GitHub-Delivery":   delivery,
		"X-GitHub-Hook-ID":    "503912334",
		"X-Hub-Signature-256": sign(body, secret),
		"User-Agent":          "GitHub-Hookshot/4b1b6a3",
	}
}

func sample(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "events", "github", name))
	require.NoError(tb, err)
	return b
}

var tenants = webhook.TenantMap{Accounts: map[string]string{"installation:1": "acme", "hook:77": "globex"}}

func provider(tb testing.TB, m webhook.TenantMap) webhook.Provider {
	tb.Helper()
	p, err := github.Declaration.New(webhook.Setup{Secrets: secret.List{secretA}, Tenants: m, Now: testkit.NewClock(now).Now})
	require.NoError(tb, err)
	return p
}

func TestVerifier(t *testing.T) {
	t.Parallel()
	webhooktest.VerifierSuite(t, webhooktest.Suite{
		Declaration: github.Declaration,
		Setup:       webhook.Setup{Tenants: tenants},
		Body:        sample(t, "issues.opened.json"),
		Sign: func(body []byte, secret string, _ time.Time) map[string]string {
			return headers("issues", "72d3162e-cc78-11e3-81ab-4c9367dc0958", body, secret)
		},
		Signature: []string{"X-Hub-Signature-256"},
		SecretA:   secretA, SecretB: secretB, Now: now,
	})
}

// GitHub's documentation publishes a test vector: the secret "It's a
// Secret to Everybody" and the payload "Hello, World!" give this
// signature.
func TestVerifyGitHubsTestVector(t *testing.T) {
	t.Parallel()
	body := []byte("Hello, World!")
	p, err := github.Declaration.New(webhook.Setup{Secrets: secret.List{"It's a Secret to Everybody"}})
	require.NoError(t, err)
	d := webhooktest.Delivery(body, map[string]string{"X-Hub-Signature-256": "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"})
	require.NoError(t, p.Verify(context.Background(), d))
	require.Equal(t, "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", github.Sign(body, "It's a Secret to Everybody"), "the provider's own signer agrees")
}

func TestVerifyRefusesMalformedSignatures(t *testing.T) {
	t.Parallel()
	body := sample(t, "push.json")
	good := sign(body, secretA)
	p := provider(t, tenants)
	for name, tc := range map[string]struct {
		headers map[string]string
		want    envelope.Code
	}{
		"SHA-1 only":            {map[string]string{"X-Hub-Signature": "sha1=0123456789abcdef0123456789abcdef01234567"}, webhook.CodeSignatureMissing},
		"no prefix":             {map[string]string{"X-Hub-Signature-256": good[len("sha256="):]}, webhook.CodeSignatureMalformed},
		"sha1 prefix":           {map[string]string{"X-Hub-Signature-256": "sha1=" + good[len("sha256="):]}, webhook.CodeSignatureMalformed},
		"not hex":               {map[string]string{"X-Hub-Signature-256": "sha256=zz" + good[9:]}, webhook.CodeSignatureMalformed},
		"short":                 {map[string]string{"X-Hub-Signature-256": good[:len(good)-2]}, webhook.CodeSignatureMalformed},
		"two signatures joined": {map[string]string{"X-Hub-Signature-256": good + "," + good}, webhook.CodeSignatureMalformed},
		"empty":                 {map[string]string{"X-Hub-Signature-256": " "}, webhook.CodeSignatureMissing},
	} {
		require.Equal(t, tc.want, webhooktest.Code(t, p.Verify(context.Background(), webhooktest.Delivery(body, tc.headers))), name)
	}
}

func TestCanonicalizeMapsTheEvent(t *testing.T) {
	t.Parallel()
	received := now.Add(3 * time.Second)
	for _, tc := range []struct {
		file, event, typ, subject string
	}{
		{"issues.opened.json", "issues", "github.issues.opened", "acme-corp/storefront"},
		{"pull_request.opened.json", "pull_request", "github.pull_request.opened", "acme-corp/storefront"},
		{"push.json", "push", "github.push", "acme-corp/storefront"},
	} {
		body := sample(t, tc.file)
		d := webhooktest.Delivery(body, headers(tc.event, "a1b2c3d4-0000-11e3-81ab-4c9367dc0958", body, secretA))
		d.ReceivedAt = received
		ev, err := provider(t, tenants).Canonicalize(context.Background(), d)
		require.NoError(t, err, tc.file)
		require.Equal(t, "a1b2c3d4-0000-11e3-81ab-4c9367dc0958", ev.ID, "the delivery id: a redelivery keeps it")
		require.Equal(t, tc.typ, ev.Type)
		require.Equal(t, "github", ev.Source)
		require.Equal(t, "acme", ev.TenantID, "installation 1 through the map")
		require.Equal(t, tc.subject, ev.Subject, "the repository")
		require.Equal(t, received, ev.Timestamp, "GitHub stamps no event time: the receipt")
		require.Equal(t, body, []byte(ev.Payload), "the payload is the body's bytes")
		raw, err := webhook.Encode(ev)
		require.NoError(t, err)
		_, rerr := envelope.Parse(raw, now, envelope.DefaultLimits())
		require.Nil(t, rerr, "ingest accepts the envelope")
	}
}

func TestCanonicalizeTenantResolution(t *testing.T) {
	t.Parallel()
	withDefault := webhook.TenantMap{Accounts: tenants.Accounts, Default: "fallback"}
	for _, tc := range []struct {
		name         string
		m            webhook.TenantMap
		installation string // "" = none in the body
		hook         string
		want         string
		code         envelope.Code
	}{
		{"installation through the map", tenants, "1", "503912334", "acme", ""},
		{"an unmapped installation is unknown, never the default", withDefault, "999", "77", "", webhook.CodeUnknownAccount},
		{"a hook through the map", tenants, "", "77", "globex", ""},
		{"an unmapped hook takes the default", withDefault, "", "78", "fallback", ""},
		{"an unmapped hook without a default", tenants, "", "78", "", webhook.CodeTenantUnresolved},
		{"no hook header, no default", tenants, "", "", "", webhook.CodeTenantUnresolved},
	} {
		body := `{"action":"created","sender":{"login":"octocat"}}`
		if tc.installation != "" {
			body = `{"action":"created","installation":{"id":` + tc.installation + `},"sender":{"login":"octocat"}}`
		}
		h := headers("issue_comment", "d-1", []byte(body), secretA)
		h["X-GitHub-Hook-ID"] = tc.hook
		ev, err := provider(t, tc.m).Canonicalize(context.Background(), webhooktest.Delivery([]byte(body), h))
		if tc.want != "" {
			require.NoError(t, err, tc.name)
			require.Equal(t, tc.want, ev.TenantID, tc.name)
			continue
		}
		var e *webhook.Error
		require.True(t, errors.As(err, &e), "%s: %v", tc.name, err)
		require.Equal(t, 422, e.Status, tc.name)
		require.Equal(t, tc.code, e.Code, tc.name)
		require.Equal(t, "d-1", e.EventID, "the operator needs the delivery id")
	}
}

func TestPingIsAcknowledgedWithoutAnEvent(t *testing.T) {
	t.Parallel()
	body := sample(t, "ping.json")
	_, err := provider(t, tenants).Canonicalize(context.Background(), webhooktest.Delivery(body, headers("ping", "p-1", body, secretA)))
	var ack *webhook.Ack
	require.True(t, errors.As(err, &ack), "got %v", err)
	require.Contains(t, ack.Reason, "Design for failure.")
}

func TestCanonicalizeRefuses(t *testing.T) {
	t.Parallel()
	body := []byte(`{"action":"opened","installation":{"id":1}}`)
	for name, tc := range map[string]struct {
		body    string
		headers map[string]string
		status  int
		code    envelope.Code
		message string
	}{
		"form-encoded hook": {"payload=%7B%22zen%22%3A%22x%22%7D", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, webhook.CodeUnsupportedMediaType, "set its content type to application/json"},
		"no event header":   {string(body), map[string]string{"X-GitHub-Event": ""}, 400, webhook.CodeInvalidEvent, "X-GitHub-Event"},
		"event not a name":  {string(body), map[string]string{"X-GitHub-Event": "Issues!"}, 400, webhook.CodeInvalidEvent, "X-GitHub-Event"},
		"no delivery id":    {string(body), map[string]string{"X-GitHub-Delivery": ""}, 400, webhook.CodeInvalidEvent, "X-GitHub-Delivery"},
		"delivery id /":     {string(body), map[string]string{"X-GitHub-Delivery": "a/b"}, 400, webhook.CodeInvalidEvent, "X-GitHub-Delivery"},
		"not JSON":          {`{"action":`, nil, 400, webhook.CodeInvalidEvent, "not a GitHub event JSON object"},
		"an array":          {`[1]`, nil, 400, webhook.CodeInvalidEvent, "a JSON object is expected"},
		"not UTF-8":         {"{\"action\":\"\xff\"}", nil, 400, webhook.CodeInvalidEvent, "UTF-8"},
		"action not a name": {`{"action":7,"installation":{"id":1}}`, nil, 400, webhook.CodeInvalidEvent, "action"},
		"action with a dot": {`{"action":"a.b","installation":{"id":1}}`, nil, 400, webhook.CodeInvalidEvent, "action"},
	} {
		h := headers("issues", "d-2", []byte(tc.body), secretA)
		for k, v := range tc.headers {
			h[k] = v
		}
		_, err := provider(t, tenants).Canonicalize(context.Background(), webhooktest.Delivery([]byte(tc.body), h))
		var e *webhook.Error
		require.True(t, errors.As(err, &e), "%s: %v", name, err)
		require.Equal(t, tc.status, e.Status, name)
		require.Equal(t, tc.code, e.Code, name)
		require.Contains(t, e.Message, tc.message, name)
	}
}

// GitHub's rules: delivery GUIDs are global, a redelivery is the same
// body (content identity), the repository orders a repository's events
// and the sender is who an erasure finds them by.
func TestRules(t *testing.T) {
	t.Parallel()
	r := github.Declaration.Rules
	require.True(t, r.GlobalIDs())
	require.Empty(t, r.IdentityScheme(), "identified by content")
	require.Equal(t, "octocat", r.Owner(sample(t, "issues.opened.json")))
	require.Equal(t, "hubot", r.Owner(sample(t, "pull_request.opened.json")))
	require.Empty(t, r.Owner([]byte(`{"sender":{"login":""}}`)))
	require.Empty(t, r.Owner([]byte(`[`)))
	require.Equal(t, "acme-corp/storefront", r.OrderingKey(envelope.Event{Subject: "acme-corp/storefront"}))
}

func TestCheckSecrets(t *testing.T) {
	t.Parallel()
	require.NoError(t, github.CheckSecrets([]string{secretA, secretB}))
	require.Error(t, github.CheckSecrets(nil))
	err := github.CheckSecrets([]string{secretA, " padded-secret\n"})
	require.ErrorContains(t, err, "#2")
	require.NotContains(t, err.Error(), "padded", "errors never quote a secret")
}
