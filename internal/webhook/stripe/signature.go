package stripe

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/siteswarm/eventplatform/internal/kit/truncate"

	stripewebhook "github.com/stripe/stripe-go/v76/webhook"

	"github.com/siteswarm/eventplatform/internal/webhook"
)

// SignatureHeader is the header Stripe signs deliveries with.
const SignatureHeader = "Stripe-Signature"

// Tolerance is how far the signed timestamp may be from the clock, either
// way: Stripe's recommended 300 s replay window. stripe-go only rejects old
// timestamps; a timestamp far in the future would otherwise make a captured
// delivery replayable for as long as it likes.
const Tolerance = 300 * time.Second

// Verify authenticates a delivery: the header must parse, its timestamp be
// within Tolerance of the clock, and one of its v1 signatures match one of
// the active secrets (compared in constant time by stripe-go). A miss
// against every cached secret triggers one rate-limited reload of the
// keyring, for a secret rolled moments ago.
func (p *Provider) Verify(ctx context.Context, d webhook.Delivery) error {
	header := d.Header(SignatureHeader)
	if strings.TrimSpace(header) == "" {
		return webhook.Unauthorized(webhook.CodeSignatureMissing, "the %s header is missing", SignatureHeader)
	}
	signedAt, err := parseTimestamp(header)
	if err != nil {
		return webhook.Unauthorized(webhook.CodeSignatureMalformed, "the %s header is malformed: %v", SignatureHeader, err)
	}
	now := p.now()
	if age := now.Sub(signedAt); age > Tolerance {
		return webhook.Unauthorized(webhook.CodeSignatureExpired, "the signature timestamp is %s old; the tolerance is %s", age.Round(time.Second), Tolerance)
	} else if -age > Tolerance {
		return webhook.Unauthorized(webhook.CodeSignatureExpired, "the signature timestamp is %s in the future; the tolerance is %s", (-age).Round(time.Second), Tolerance)
	}
	if matches(d.Body, header, p.Secrets.Active(ctx)) {
		return nil
	}
	if fresh, changed := p.Secrets.Reload(ctx); changed && matches(d.Body, header, fresh) {
		return nil
	}
	return webhook.Unauthorized(webhook.CodeSignatureMismatch, "no signature matches an active signing secret")
}

// matches reports whether any v1 signature in header is valid for body
// under any secret. The timestamp window was enforced by the caller against
// the injected clock, so stripe-go's own (wall-clock, past-only) check is
// skipped; so is its API-version check, which would reject real events
// whenever the endpoint's API version differs from the library's.
func matches(body []byte, header string, secrets []string) bool {
	for _, s := range secrets {
		if stripewebhook.ValidatePayloadIgnoringTolerance(body, header, s) == nil {
			return true
		}
	}
	return false
}

// parseTimestamp reads the signed timestamp the way stripe-go parses the
// header ("t=1700000000,v1=<hex>,v1=<hex>,v0=…": comma-separated key=value
// pairs, the last t wins, unknown keys are ignored), and insists on at
// least one well-formed v1 signature, so a malformed header is reported as
// such rather than as a mismatch.
func parseTimestamp(header string) (time.Time, error) {
	var (
		ts     int64
		haveTS bool
		v1     int
	)
	for _, pair := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(pair, "=")
		if !ok || strings.Contains(v, "=") {
			return time.Time{}, fmt.Errorf("%q is not a key=value pair", truncate.String(pair, 16))
		}
		switch k {
		case "t":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return time.Time{}, errors.New("t is not a unix timestamp")
			}
			ts, haveTS = n, true
		case "v1":
			if _, err := hex.DecodeString(v); err == nil && v != "" {
				v1++
			}
		}
	}
	if !haveTS {
		return time.Time{}, errors.New("no t= timestamp")
	}
	if v1 == 0 {
		return time.Time{}, errors.New("no v1= signature")
	}
	return time.Unix(ts, 0), nil
}

// Sign returns a Stripe-Signature header value for body signed at t with
// each secret (one v1 signature per secret, as Stripe sends during a
// secret roll). Tests, benchmarks and `evp` use it to post deliveries.
func Sign(body []byte, t time.Time, secrets ...string) string {
	var b strings.Builder
	b.WriteString("t=")
	b.WriteString(strconv.FormatInt(t.Unix(), 10))
	for _, s := range secrets {
		b.WriteString(",v1=")
		b.WriteString(hex.EncodeToString(stripewebhook.ComputeSignature(t, body, s)))
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
