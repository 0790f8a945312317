package deliver

import (
	"crypto/hmac"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/siteswarm/eventplatform/internal/kit/stdwebhook"
)

// Standard Webhooks headers (internal/kit/stdwebhook).
const (
	HeaderID        = stdwebhook.HeaderID
	HeaderTimestamp = stdwebhook.HeaderTimestamp
	HeaderSignature = stdwebhook.HeaderSignature
)

// SecretPrefix starts a Standard Webhooks signing secret; the rest is the
// base64-encoded key.
const SecretPrefix = stdwebhook.SecretPrefix

// Key decodes a signing secret ("whsec_<base64>", the prefix optional) to
// its HMAC key. Errors never quote the secret.
func Key(secret string) ([]byte, error) {
	key, err := stdwebhook.Key(secret)
	if err != nil {
		return nil, fmt.Errorf("deliver: %w", err)
	}
	return key, nil
}

// Signature is the v1 signature of one delivery (stdwebhook.Signature).
func Signature(key []byte, id string, ts time.Time, body []byte) string {
	return stdwebhook.Signature(key, id, ts, body)
}

// Sign returns the webhook-signature header value: one "v1,<sig>" per
// active secret, space-separated, so a subscriber that knows either the
// old or the new secret verifies during a rotation.
func Sign(secrets []string, id string, ts time.Time, body []byte) (string, error) {
	h, err := stdwebhook.Header(secrets, id, ts, body)
	if err != nil {
		return "", fmt.Errorf("deliver: %w", err)
	}
	return h, nil
}

// DefaultTolerance is how far a delivery's timestamp may be from the
// subscriber's clock (either way) before Verify rejects it as a replay.
const DefaultTolerance = stdwebhook.DefaultTolerance

// Verification errors.
var (
	ErrMissingHeaders = errors.New("deliver: missing webhook-id, webhook-timestamp or webhook-signature")
	ErrTimestamp      = errors.New("deliver: webhook-timestamp outside the tolerance")
	ErrSignature      = errors.New("deliver: no matching signature")
)

// Verify checks a delivery the way a subscriber should: the timestamp
// within tolerance of now (past or future), and one v1 signature matching
// (compared in constant time).
func Verify(secret string, h http.Header, body []byte, tolerance time.Duration, now time.Time) error {
	id, tsText, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if id == "" || tsText == "" || sigs == "" {
		return ErrMissingHeaders
	}
	sec, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return ErrTimestamp
	}
	ts := time.Unix(sec, 0)
	if d := now.Sub(ts); d > tolerance || d < -tolerance {
		return ErrTimestamp
	}
	key, err := Key(secret)
	if err != nil {
		return err
	}
	want := []byte(Signature(key, id, ts, body))
	for _, sig := range strings.Fields(sigs) {
		v, got, ok := strings.Cut(sig, ",")
		if ok && v == "v1" && hmac.Equal([]byte(got), want) {
			return nil
		}
	}
	return ErrSignature
}
