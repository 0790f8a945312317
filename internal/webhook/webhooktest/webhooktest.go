// Package webhooktest is the contract every webhook provider's verifier
// and canonicalizer passes (VerifierSuite, CheckCanonical), with the
// fixtures it needs: a rotating secret store, a settable clock, deliveries
// and the codes of refusals. The suite signs with the provider test's own
// signer — an implementation of the provider's documented algorithm
// written apart from the provider's, or the provider's reference library —
// never with the provider's Sign.
package webhooktest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/secret"
	"github.com/siteswarm/eventplatform/internal/webhook"
)

// Store is a secret.Store whose contents a test changes, as an operator
// edits the Secrets Manager secret during a rotation.
type Store struct {
	mu      sync.Mutex
	secrets []string
	loads   int
}

// NewStore holds secrets.
func NewStore(secrets ...string) *Store { return &Store{secrets: secrets} }

// Load returns the current secrets.
func (s *Store) Load(context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loads++
	return slices.Clone(s.secrets), nil
}

// Set replaces the secrets.
func (s *Store) Set(secrets ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secrets = secrets
}

// Loads counts the loads.
func (s *Store) Loads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loads
}

// Keyring caches st on clk, as the function's keyring does.
func Keyring(tb testing.TB, st secret.Store, clk *testkit.Clock) *secret.Keyring {
	tb.Helper()
	k, err := secret.NewKeyring(context.Background(), st, secret.KeyringOptions{Now: clk.Now})
	require.NoError(tb, err)
	return k
}

// Delivery is a delivery of body with headers (names in any case, as a
// test writes them; API Gateway lowercases them, which Suite also tries).
func Delivery(body []byte, headers map[string]string) webhook.Delivery {
	return webhook.Delivery{Body: body, Headers: headers}
}

// Lower is headers with lowercase names, as API Gateway hands them over.
func Lower(headers map[string]string) map[string]string {
	out := make(map[string]string, len(headers))
	for k, v := range headers {
		out[strings.ToLower(k)] = v
	}
	return out
}

// Code is the code of a verification refusal ("" for none), requiring it
// to be a coded 401 with a message.
func Code(tb testing.TB, err error) envelope.Code {
	tb.Helper()
	if err == nil {
		return ""
	}
	var e *webhook.Error
	require.True(tb, errors.As(err, &e), "verification errors are *webhook.Error, got %T: %v", err, err)
	require.Equal(tb, 401, e.Status, e.Error())
	require.NotEmpty(tb, e.Message)
	return e.Code
}

// Suite is what VerifierSuite needs of a provider's test.
type Suite struct {
	// Declaration is the provider under test.
	Declaration webhook.Declaration
	// Setup is the provider's setup but its secrets and clock (tenants;
	// for a provider with sources, Source is filled from the suite's
	// keyring for the source Source).
	Setup  webhook.Setup
	Source string
	// Body is a delivery's body the provider accepts.
	Body []byte
	// Sign signs body at a time with secret the way the provider
	// documents it, written apart from the provider's code: the headers
	// (names in the provider's own case) besides the body.
	Sign func(body []byte, secret string, at time.Time) map[string]string
	// Signature are the headers that carry the signature: the suite
	// removes them for the "missing" case.
	Signature []string
	// SecretA and SecretB are two valid secrets of the provider.
	SecretA, SecretB string
	// Now is the suite's clock start.
	Now time.Time
}

// build makes the provider on a keyring of st and a clock.
func (s Suite) build(tb testing.TB, st secret.Store, clk *testkit.Clock) webhook.Provider {
	tb.Helper()
	k := Keyring(tb, st, clk)
	setup := s.Setup
	setup.Now = clk.Now
	setup.Secrets = k
	if s.Declaration.Sources {
		setup.Source = func(source string) (webhook.Secrets, bool) {
			if source == s.Source {
				return k, true
			}
			return nil, false
		}
	}
	p, err := s.Declaration.New(setup)
	require.NoError(tb, err)
	return p
}

// delivery is a delivery signed by the suite's signer.
func (s Suite) delivery(body []byte, secret string, at time.Time) webhook.Delivery {
	d := Delivery(body, s.Sign(body, secret, at))
	d.Source = s.Source
	return d
}

// VerifierSuite runs what every provider's verifier must do: verify the
// raw body bytes exactly as signed by an independent signer; refuse a
// flipped byte, a wrong secret and a missing signature with coded 401s;
// accept any active secret during a rotation, each step taking effect at
// the next refresh; reload once on a miss (rate-limited) for a secret
// rolled moments ago; and read header names in any case.
func VerifierSuite(t *testing.T, s Suite) {
	ctx := context.Background()
	t.Run("valid", func(t *testing.T) {
		t.Parallel()
		p := s.build(t, secret.List{s.SecretA}, testkit.NewClock(s.Now))
		require.Empty(t, Code(t, p.Verify(ctx, s.delivery(s.Body, s.SecretA, s.Now))))
		d := s.delivery(s.Body, s.SecretA, s.Now)
		d.Headers = Lower(d.Headers)
		require.Empty(t, Code(t, p.Verify(ctx, d)), "lowercase header names (API Gateway)")
		upper := map[string]string{}
		for k, v := range s.Sign(s.Body, s.SecretA, s.Now) {
			upper[strings.ToUpper(k)] = v
		}
		d.Headers = upper
		require.Empty(t, Code(t, p.Verify(ctx, d)), "uppercase header names")
	})
	t.Run("one byte of the body flipped", func(t *testing.T) {
		t.Parallel()
		p := s.build(t, secret.List{s.SecretA}, testkit.NewClock(s.Now))
		d := s.delivery(s.Body, s.SecretA, s.Now)
		flipped := slices.Clone(s.Body)
		flipped[len(flipped)/2] ^= 0x01
		d.Body = flipped
		require.Equal(t, webhook.CodeSignatureMismatch, Code(t, p.Verify(ctx, d)))
		d.Body = append(slices.Clone(s.Body), '\n')
		require.Equal(t, webhook.CodeSignatureMismatch, Code(t, p.Verify(ctx, d)), "a byte added (the raw bytes are what is signed)")
	})
	t.Run("wrong secret", func(t *testing.T) {
		t.Parallel()
		p := s.build(t, secret.List{s.SecretA}, testkit.NewClock(s.Now))
		require.Equal(t, webhook.CodeSignatureMismatch, Code(t, p.Verify(ctx, s.delivery(s.Body, s.SecretB, s.Now))))
	})
	t.Run("missing signature", func(t *testing.T) {
		t.Parallel()
		p := s.build(t, secret.List{s.SecretA}, testkit.NewClock(s.Now))
		d := s.delivery(s.Body, s.SecretA, s.Now)
		for _, h := range s.Signature {
			for k := range d.Headers {
				if strings.EqualFold(k, h) {
					delete(d.Headers, k)
				}
			}
		}
		require.Equal(t, webhook.CodeSignatureMissing, Code(t, p.Verify(ctx, d)))
	})
	t.Run("rotation", func(t *testing.T) {
		t.Parallel()
		clk := testkit.NewClock(s.Now)
		st := NewStore(s.SecretA)
		p := s.build(t, st, clk)
		verify := func(secret string) envelope.Code {
			return Code(t, p.Verify(ctx, s.delivery(s.Body, secret, clk.Now())))
		}
		require.Empty(t, verify(s.SecretA))
		clk.Advance(secret.DefaultMinReload) // the miss below may reload
		require.Equal(t, webhook.CodeSignatureMismatch, verify(s.SecretB), "the new secret is not active yet")
		st.Set(s.SecretB, s.SecretA)
		clk.Advance(secret.DefaultRefresh)
		require.Empty(t, verify(s.SecretA), "old secret still active")
		require.Empty(t, verify(s.SecretB), "new secret active")
		st.Set(s.SecretB)
		clk.Advance(secret.DefaultRefresh)
		require.Empty(t, verify(s.SecretB))
		require.Equal(t, webhook.CodeSignatureMismatch, verify(s.SecretA), "a removed secret no longer verifies")
	})
	t.Run("reload on a miss, rate-limited", func(t *testing.T) {
		t.Parallel()
		clk := testkit.NewClock(s.Now)
		st := NewStore(s.SecretA)
		p := s.build(t, st, clk)
		require.Equal(t, 1, st.Loads(), "loaded once at cold start")
		st.Set(s.SecretB)
		clk.Advance(time.Minute) // well inside the refresh interval
		require.Empty(t, Code(t, p.Verify(ctx, s.delivery(s.Body, s.SecretB, clk.Now()))), "a secret rolled with immediate expiry works at once")
		require.Equal(t, 2, st.Loads())
		for range 5 { // the old secret, removed: a forgery now
			require.Equal(t, webhook.CodeSignatureMismatch, Code(t, p.Verify(ctx, s.delivery(s.Body, s.SecretA, clk.Now()))))
		}
		require.Equal(t, 2, st.Loads(), "forged deliveries within the reload limit do not reload")
	})
}

// CheckCanonical is what a canonicalizer's fuzz target asserts of any
// verified delivery: a refusal is a coded *webhook.Error of status 400,
// 415 or 422 (or an *webhook.Ack), and an accepted delivery becomes an
// envelope ingest parses (a refusal there has a code the webhook maps to
// 400), its payload the body's bytes.
func CheckCanonical(t *testing.T, d webhook.Delivery, ev envelope.Event, err error, now time.Time) {
	t.Helper()
	if err != nil {
		var ack *webhook.Ack
		if errors.As(err, &ack) {
			return
		}
		var e *webhook.Error
		if !errors.As(err, &e) || (e.Status != 400 && e.Status != 415 && e.Status != 422) || e.Code == "" || e.Message == "" {
			t.Fatalf("a refusal that is not a coded 400/415/422: %v", err)
		}
		return
	}
	if string(ev.Payload) != string(d.Body) {
		t.Fatalf("the payload is not the body's bytes")
	}
	raw, err := webhook.Encode(ev)
	if err != nil {
		return // a payload that is not a JSON object is refused by Encode (400 in the handler)
	}
	if _, rerr := envelope.Parse(raw, now.Add(time.Hour), envelope.DefaultLimits()); rerr != nil && rerr.Code == "" {
		t.Fatalf("canonical envelope refused without a code: %v", rerr)
	}
}

// Padded is body (a JSON object) grown to exactly size bytes by a
// "padding" member added first: a delivery of a given size for
// benchmarks.
func Padded(tb testing.TB, body []byte, size int) []byte {
	tb.Helper()
	rest := strings.TrimPrefix(strings.TrimSpace(string(body)), "{")
	build := func(n int) string { return `{"padding":"` + strings.Repeat("x", n) + `",` + rest }
	n := size - len(build(0))
	require.GreaterOrEqual(tb, n, 0, "the sample is larger than %d bytes", size)
	out := build(n)
	require.Len(tb, out, size)
	return []byte(out)
}

// BenchVerifyCanonicalize is a provider's own CPU per delivery: the
// signature check (an HMAC over the raw body per active secret tried), the
// event's parse, the tenant's resolution and the envelope handed to
// ingest, for 2 KiB and 64 KiB bodies; "64KiB-rotation" has two active
// secrets and the delivery signed with the second, the worst case during
// a secret roll. make bench reports it per provider (docs/benchmarks.md).
func BenchVerifyCanonicalize(b *testing.B, s Suite) {
	for _, tc := range []struct {
		name    string
		size    int
		secrets []string
	}{
		{"2KiB", 2 << 10, []string{s.SecretA}},
		{"64KiB", 64 << 10, []string{s.SecretA}},
		{"64KiB-rotation", 64 << 10, []string{s.SecretB, s.SecretA}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			p := s.build(b, secret.List(tc.secrets), testkit.NewClock(s.Now))
			d := s.delivery(Padded(b, s.Body, tc.size), s.SecretA, s.Now)
			b.SetBytes(int64(len(d.Body)))
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Verify(ctx, d); err != nil {
					b.Fatal(err)
				}
				ev, err := p.Canonicalize(ctx, d)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := webhook.Encode(ev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
