package stripe

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/siteswarm/eventplatform/internal/kit/truncate"
	"github.com/siteswarm/eventplatform/internal/webhook"
)

// SignatureHeader is the header Stripe signs deliveries with.
const SignatureHeader = "Stripe-Signature"

// Tolerance is how far the signed timestamp may be from the clock, either
// way: Stripe's recommended 300 s replay window. stripe-go only rejects old
// timestamps; a timestamp far in the future would otherwise make a captured
// delivery replayable for as long as it likes.
const Tolerance = 300 * time.Second

// Verify authenticates a delivery as Stripe documents it: the header must
// parse, its timestamp be within Tolerance of the clock, and one of its v1
// signatures (hex HMAC-SHA256 of "<t>.<body>") match one of the active
// secrets, compared in constant time. A miss against every cached secret
// triggers one rate-limited reload of the keyring, for a secret rolled
// moments ago.
func (p *Provider) Verify(ctx context.Context, d webhook.Delivery) error {
	header := d.Header(SignatureHeader)
	if strings.TrimSpace(header) == "" {
		return webhook.Unauthorized(webhook.CodeSignatureMissing, "the %s header is missing", SignatureHeader)
	}
	signedAt, sigs, err := parseHeader(header)
	if err != nil {
		return webhook.Unauthorized(webhook.CodeSignatureMalformed, "the %s header is malformed: %v", SignatureHeader, err)
	}
	now := p.now()
	if age := now.Sub(time.Unix(signedAt, 0)); age > Tolerance {
		return webhook.Unauthorized(webhook.CodeSignatureExpired, "the signature timestamp is %s old; the tolerance is %s", age.Round(time.Second), Tolerance)
	} else if -age > Tolerance {
		return webhook.Unauthorized(webhook.CodeSignatureExpired, "the signature timestamp is %s in the future; the tolerance is %s", (-age).Round(time.Second), Tolerance)
	}
	if webhook.Verified(ctx, p.Secrets, func(secret string) bool { return matches(d.Body, signedAt, sigs, secret) }) {
		return nil
	}
	return webhook.Unauthorized(webhook.CodeSignatureMismatch, "no signature matches an active signing secret")
}

// matches reports whether any v1 signature is valid for body signed at t
// under secret. The standard library's HMAC, not stripe-go's webhook
// package: that package links all of stripe-go (4 MB) into every binary
// that asks this provider's rules (ingest among them). stripe-go signs
// the tests' deliveries, so the two are checked against each other.
func matches(body []byte, t int64, sigs [][]byte, secret string) bool {
	want := mac(body, t, secret)
	for _, sig := range sigs {
		if hmac.Equal(sig, want) {
			return true
		}
	}
	return false
}

// mac is Stripe's v1 signature of body at t: HMAC-SHA256 of "<t>.<body>".
func mac(body []byte, t int64, secret string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(strconv.AppendInt(nil, t, 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// parseHeader reads the header the way Stripe writes it
// ("t=1700000000,v1=<hex>,v1=<hex>,v0=…": comma-separated key=value pairs,
// the last t wins, unknown keys and v1 values that are not hex are
// ignored) and insists on at least one well-formed v1 signature, so a
// malformed header is reported as such rather than as a mismatch.
func parseHeader(header string) (int64, [][]byte, error) {
	var (
		ts     int64
		haveTS bool
		sigs   [][]byte
	)
	for _, pair := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(pair, "=")
		if !ok || strings.Contains(v, "=") {
			return 0, nil, fmt.Errorf("%q is not a key=value pair", truncate.String(pair, 16))
		}
		switch k {
		case "t":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, nil, errors.New("t is not a unix timestamp")
			}
			ts, haveTS = n, true
		case "v1":
			if sig, err := hex.DecodeString(v); err == nil && len(sig) > 0 {
				sigs = append(sigs, sig)
			}
		}
	}
	if !haveTS {
		return 0, nil, errors.New("no t= timestamp")
	}
	if len(sigs) == 0 {
		return 0, nil, errors.New("no v1= signature")
	}
	return ts, sigs, nil
}

// Sign returns a Stripe-Signature header value for body signed at t with
// each secret (one v1 signature per secret, as Stripe sends during a
// secret roll). `evp`, benchmarks and the local stack's tests use it to
// post deliveries; the verifier's tests sign with stripe-go instead.
func Sign(body []byte, t time.Time, secrets ...string) string {
	var b strings.Builder
	b.WriteString("t=")
	b.WriteString(strconv.FormatInt(t.Unix(), 10))
	for _, s := range secrets {
		b.WriteString(",v1=")
		b.WriteString(hex.EncodeToString(mac(body, t.Unix(), s)))
	}
	return b.String()
}

// SecretPrefix starts every Stripe webhook signing secret.
const SecretPrefix = "whsec_"

// CheckSecrets rejects a list that holds anything but Stripe signing
// secrets (an API key pasted by mistake would never verify anything and
// should fail loudly instead). Errors never quote a secret.
func CheckSecrets(secrets []string) error {
	if len(secrets) == 0 {
		return errors.New("stripe: no signing secret configured")
	}
	for i, s := range secrets {
		if !strings.HasPrefix(s, SecretPrefix) || len(s) == len(SecretPrefix) {
			return fmt.Errorf("stripe: signing secret #%d does not look like a webhook signing secret (%s…)", i+1, SecretPrefix)
		}
	}
	return nil
}
