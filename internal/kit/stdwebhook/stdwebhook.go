// Package stdwebhook is the Standard Webhooks signature scheme
// (standardwebhooks.com), both ways: the platform signs what it delivers
// to subscribers with it (internal/handlers/deliver) and verifies what Standard
// Webhooks senders post to it (internal/webhook/standard). A secret is
// "whsec_" and a base64 key; a delivery's webhook-signature is a
// space-separated list of "v1,<base64 HMAC-SHA256 of id.timestamp.body>",
// any one of which may match.
package stdwebhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The headers of a delivery.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts a signing secret; the rest is the base64-encoded key.
const SecretPrefix = "whsec_"

// MinKeyBytes is the shortest key accepted (the spec asks for 24 to 64
// random bytes; shorter keys are guessable).
const MinKeyBytes = 16

// Key decodes a signing secret ("whsec_<base64>", the prefix optional) to
// its HMAC key. Errors never quote the secret.
func Key(secret string) ([]byte, error) {
	b64 := strings.TrimPrefix(strings.TrimSpace(secret), SecretPrefix)
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, errors.New("signing secret is not whsec_ followed by base64")
	}
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("signing secret is shorter than %d bytes", MinKeyBytes)
	}
	return key, nil
}

// Signature is the v1 signature of one delivery: base64 of
// HMAC-SHA256(key, "<id>.<timestamp>.<body>").
func Signature(key []byte, id string, ts time.Time, body []byte) string {
	return base64.StdEncoding.EncodeToString(mac(key, id, ts.Unix(), body))
}

func mac(key []byte, id string, ts int64, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write(strconv.AppendInt(nil, ts, 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Header returns the webhook-signature value: one "v1,<sig>" per secret,
// space-separated, so a receiver that knows either the old or the new
// secret verifies during a rotation.
func Header(secrets []string, id string, ts time.Time, body []byte) (string, error) {
	if len(secrets) == 0 {
		return "", errors.New("no signing secret")
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

// Signatures parses a webhook-signature value: the decoded v1 signatures
// (other versions, such as the asymmetric v1a, are skipped). Malformed
// entries are an error; no v1 signature is an empty list.
func Signatures(header string) ([][]byte, error) {
	var out [][]byte
	for _, entry := range strings.Fields(header) {
		v, sig, ok := strings.Cut(entry, ",")
		if !ok || v == "" {
			return nil, errors.New("an entry is not <version>,<signature>")
		}
		if v != "v1" {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(sig)
		if err != nil || len(b) != sha256.Size {
			return nil, errors.New("a v1 signature is not a base64 HMAC-SHA256")
		}
		out = append(out, b)
	}
	return out, nil
}

// Matches reports whether one of sigs (Signatures) is the v1 signature of
// the delivery under key, compared in constant time.
func Matches(key []byte, id string, ts int64, body []byte, sigs [][]byte) bool {
	want := mac(key, id, ts, body)
	for _, sig := range sigs {
		if hmac.Equal(sig, want) {
			return true
		}
	}
	return false
}

// DefaultTolerance is how far a delivery's timestamp may be from the
// receiver's clock (either way) before it is refused as a replay.
const DefaultTolerance = 5 * time.Minute
