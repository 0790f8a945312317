package stripe_test

import (
	"context"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	stripego "github.com/stripe/stripe-go/v76"
	stripewebhook "github.com/stripe/stripe-go/v76/webhook"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/secret"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	"github.com/siteswarm/eventplatform/internal/webhook/webhooktest"
)

const (
	secretA = "whsec_test_secret_a_0123456789abcdef"
	secretB = "whsec_test_secret_b_fedcba9876543210"
)

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// clock is a settable time source shared by the provider and its keyring.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// store is a SecretStore whose contents the test changes, as an operator
// edits the Secrets Manager secret during a rotation.
type store struct {
	mu      sync.Mutex
	secrets []string
	loads   int
	err     error
}

func (s *store) Load(context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loads++
	if s.err != nil {
		return nil, s.err
	}
	return append([]string(nil), s.secrets...), nil
}

func (s *store) Set(secrets ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secrets = secrets
}

func (s *store) Loads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loads
}

func provider(t testing.TB, clk *clock, st secret.Store, tenants webhook.TenantMap) *stripe.Provider {
	t.Helper()
	keys, err := secret.NewKeyring(context.Background(), st, secret.KeyringOptions{Now: clk.Now})
	require.NoError(t, err)
	p := stripe.New(keys, tenants, nil)
	p.Now = clk.Now
	return p
}

func sample(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "events", "stripe", name))
	require.NoError(t, err)
	return b
}

func delivery(body []byte, header string) webhook.Delivery {
	h := map[string]string{"content-type": "application/json; charset=utf-8"}
	if header != "" {
		h["stripe-signature"] = header
	}
	return webhook.Delivery{Body: body, Headers: h}
}

func hexSig(body []byte, t time.Time, secret string) string {
	return hex.EncodeToString(stripewebhook.ComputeSignature(t, body, secret))
}

// replaceTimestamp swaps the header's t= for another time, keeping the
// signatures: the timestamp is part of what is signed.
func replaceTimestamp(header string, t time.Time) string {
	_, rest, _ := strings.Cut(header, ",")
	return "t=" + strconv.FormatInt(t.Unix(), 10) + "," + rest
}

func codeOf(t *testing.T, err error) envelope.Code {
	t.Helper()
	if err == nil {
		return ""
	}
	var e *webhook.Error
	require.True(t, errors.As(err, &e), "verification errors are *webhook.Error, got %T", err)
	require.Equal(t, 401, e.Status)
	require.NotEmpty(t, e.Message)
	return e.Code
}

func TestVerifySignatureMatrix(t *testing.T) {
	t.Parallel()
	body := sample(t, "invoice.paid.json")
	flipped := append([]byte(nil), body...)
	flipped[len(flipped)/2] ^= 0x01

	cases := []struct {
		name   string
		body   []byte
		header string
		want   envelope.Code
	}{
		{"valid", body, stripe.Sign(body, now, secretA), ""},
		{"one byte of body flipped", flipped, stripe.Sign(body, now, secretA), webhook.CodeSignatureMismatch},
		{"wrong secret", body, stripe.Sign(body, now, secretB), webhook.CodeSignatureMismatch},
		{"missing header", body, "", webhook.CodeSignatureMissing},
		{"malformed: not key=value", body, "garbage", webhook.CodeSignatureMalformed},
		{"malformed: timestamp not a number", body, "t=yesterday,v1=" + hexSig(body, now, secretA), webhook.CodeSignatureMalformed},
		{"malformed: no timestamp", body, "v1=" + hexSig(body, now, secretA), webhook.CodeSignatureMalformed},
		{"malformed: no v1 signature", body, "t=1796212800,v0=abcdef", webhook.CodeSignatureMalformed},
		{"malformed: v1 not hex", body, "t=1796212800,v1=zz", webhook.CodeSignatureMalformed},
		{"two v1 signatures, only the second valid", body, stripe.Sign(body, now, secretB, secretA), ""},
		{"two v1 signatures, neither valid", body, stripe.Sign(body, now, secretB, "whsec_other"), webhook.CodeSignatureMismatch},
		{"unknown schemes are ignored", body, stripe.Sign(body, now, secretA) + ",v0=deadbeef,x=1", ""},
		{"timestamp 299 s old", body, stripe.Sign(body, now.Add(-299*time.Second), secretA), ""},
		{"timestamp 300 s old", body, stripe.Sign(body, now.Add(-300*time.Second), secretA), ""},
		{"timestamp 301 s old", body, stripe.Sign(body, now.Add(-301*time.Second), secretA), webhook.CodeSignatureExpired},
		{"timestamp 299 s in the future", body, stripe.Sign(body, now.Add(299*time.Second), secretA), ""},
		{"timestamp 301 s in the future", body, stripe.Sign(body, now.Add(301*time.Second), secretA), webhook.CodeSignatureExpired},
		{"timestamp of another signature time", body, replaceTimestamp(stripe.Sign(body, now.Add(-10*time.Second), secretA), now), webhook.CodeSignatureMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := provider(t, &clock{t: now}, secret.List{secretA}, webhook.TenantMap{})
			require.Equal(t, tc.want, codeOf(t, p.Verify(context.Background(), delivery(tc.body, tc.header))))
		})
	}
}

func TestVerifyHeaderNameIsCaseInsensitive(t *testing.T) {
	t.Parallel()
	body := sample(t, "invoice.paid.json")
	p := provider(t, &clock{t: now}, secret.List{secretA}, webhook.TenantMap{})
	d := webhook.Delivery{Body: body, Headers: map[string]string{"Stripe-Signature": stripe.Sign(body, now, secretA)}}
	require.NoError(t, p.Verify(context.Background(), d))
}

// The samples carry Stripe's current API version, not the one stripe-go
// v76 was generated for: a real event must still verify.
func TestVerifyIgnoresAPIVersionMismatch(t *testing.T) {
	t.Parallel()
	body := sample(t, "invoice.paid.json")
	require.NotContains(t, string(body), `"api_version": "`+stripego.APIVersion+`"`, "the sample must exercise a mismatch")
	p := provider(t, &clock{t: now}, secret.List{secretA}, webhook.TenantMap{Default: "acme"})
	d := delivery(body, stripe.Sign(body, now, secretA))
	require.NoError(t, p.Verify(context.Background(), d))
	_, err := p.Canonicalize(context.Background(), d)
	require.NoError(t, err)
}

// TestVerifySecretRotation follows Stripe's "roll secret" procedure: Stripe
// signs with the new and the old secret during the overlap; the operator
// adds the new secret to the list, then removes the old one once the
// overlap ends. Each step takes effect at the next refresh, without a
// redeploy.
func TestVerifySecretRotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	body := sample(t, "customer.subscription.updated.json")
	clk := &clock{t: now}
	st := &store{secrets: []string{secretA}}
	p := provider(t, clk, st, webhook.TenantMap{})
	verify := func(secrets ...string) envelope.Code {
		return codeOf(t, p.Verify(ctx, delivery(body, stripe.Sign(body, clk.Now(), secrets...))))
	}

	require.Empty(t, verify(secretA))
	require.Equal(t, webhook.CodeSignatureMismatch, verify(secretB), "the new secret is not active yet")

	// Stripe rolls: both signatures on every delivery. The old one matches.
	require.Empty(t, verify(secretB, secretA))

	// Old and new both active.
	st.Set(secretB, secretA)
	clk.Advance(secret.DefaultRefresh)
	require.Empty(t, verify(secretA), "old secret still active")
	require.Empty(t, verify(secretB), "new secret active")

	// Old removed.
	st.Set(secretB)
	clk.Advance(secret.DefaultRefresh)
	require.Empty(t, verify(secretB))
	require.Equal(t, webhook.CodeSignatureMismatch, verify(secretA), "a removed secret no longer verifies")
}

// A secret rolled with immediate expiry: the first delivery signed only
// with the new secret misses the cache and triggers one reload; forged
// deliveries cannot make the keyring reload more than once per
// MinReload.
func TestVerifyReloadsOnMissRateLimited(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	body := sample(t, "invoice.paid.json")
	clk := &clock{t: now}
	st := &store{secrets: []string{secretA}}
	p := provider(t, clk, st, webhook.TenantMap{})
	require.Equal(t, 1, st.Loads(), "loaded once at cold start")

	st.Set(secretB)
	clk.Advance(time.Minute) // well inside the refresh interval
	require.NoError(t, p.Verify(ctx, delivery(body, stripe.Sign(body, clk.Now(), secretB))))
	require.Equal(t, 2, st.Loads())

	for range 5 {
		require.Equal(t, webhook.CodeSignatureMismatch, codeOf(t, p.Verify(ctx, delivery(body, stripe.Sign(body, clk.Now(), "whsec_forged")))))
	}
	require.Equal(t, 2, st.Loads(), "misses within MinReload do not reload")
	clk.Advance(secret.DefaultMinReload)
	require.Equal(t, webhook.CodeSignatureMismatch, codeOf(t, p.Verify(ctx, delivery(body, stripe.Sign(body, clk.Now(), "whsec_forged")))))
	require.Equal(t, 3, st.Loads())
}

func TestCheckSecrets(t *testing.T) {
	t.Parallel()
	require.NoError(t, stripe.CheckSecrets([]string{secretA, secretB}))
	require.Error(t, stripe.CheckSecrets(nil))
	require.Error(t, stripe.CheckSecrets([]string{"whsec_"}))
	err := stripe.CheckSecrets([]string{secretA, "sk_live_not_a_webhook_secret"})
	require.ErrorContains(t, err, "#2")
	require.NotContains(t, err.Error(), "sk_live", "errors never quote a secret")
}

// The contract every provider's verifier passes, signed by stripe-go.
func TestVerifier(t *testing.T) {
	t.Parallel()
	webhooktest.VerifierSuite(t, webhooktest.Suite{
		Declaration: stripe.Declaration,
		Setup:       webhook.Setup{Tenants: webhook.TenantMap{Default: "acme"}},
		Body:        sample(t, "invoice.paid.json"),
		Sign: func(body []byte, secret string, at time.Time) map[string]string {
			p := stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: at})
			return map[string]string{"Stripe-Signature": p.Header}
		},
		Signature: []string{"Stripe-Signature"},
		SecretA:   secretA, SecretB: secretB, Now: now,
	})
}
