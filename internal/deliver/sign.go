package deliver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks headers.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts a Standard Webhooks signing secret; the rest is the
// base64-encoded key.
const SecretPrefix = "whsec_"

// Key decodes a signing secret ("whsec_<base64>", the prefix optional) to
// its HMAC key. Errors never quote the secret.
func Key(secret string) ([]byte, error) {
	b64 := strings.TrimPrefix(strings.TrimSpace(secret), SecretPrefix)
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, errors.New("deliver: signing secret is not whsec_ followed by base64")
	}
	if len(key) < 16 {
		return nil, errors.New("deliver: signing secret is shorter than 16 bytes")
	}
	return key, nil
}

// Signature is the v1 signature of one delivery: base64 of
// HMAC-SHA256(key, "<id>.<timestamp>.<body>").
func Signature(key []byte, id string, ts time.Time, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(strconv.FormatInt(ts.Unix(), 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Sign returns the webhook-signature header value: one "v1,<sig>" per
// active secret, space-separated, so a subscriber that knows either the
// old or the new secret verifies during a rotation.
func Sign(secrets []string, id string, ts time.Time, body []byte) (string, error) {
	if len(secrets) == 0 {
		return "", errors.New("deliver: no signing secret")
	}
	sigs := make([]string, 0, len(secrets))
	for i, s := range secrets {
		key, err := Key(s)
		if err != nil {
			return "", fmt.Errorf("active secret #%d: %w", i+1, err)
		}
		sigs = append(sigs, "v1,"+Signature(key, id, ts, body))
	}
	return strings.Join(sigs, " "), nil
}

// DefaultTolerance is how far a delivery's timestamp may be from the
// subscriber's clock (either way) before Verify rejects it as a replay.
const DefaultTolerance = 5 * time.Minute

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
