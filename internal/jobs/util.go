package jobs

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/siteswarm/eventplatform/internal/kit/canonjson"
)

// The names' and keys' syntax, each the regular expression its comment
// quotes written out over bytes (all ASCII: a byte outside it never
// matches, as in the regexp). Hand-written because a package-level regexp
// is compiled by every cold start of every function that links jobs (the
// key's {1,200} alone unrolls into 200 states); util_test.go holds each to
// its regexp (matchtest).

// ValidJobID reports whether s is a job id the engine issues:
// ^job_[0-9a-f]{32}$.
func ValidJobID(s string) bool {
	if len(s) != 36 || s[:4] != "job_" {
		return false
	}
	for i := 4; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9') && !('a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// validKind is a kind's name: lowercase words joined by single hyphens,
// ^[a-z][a-z0-9]*(-[a-z0-9]+)*$.
func validKind(s string) bool {
	if s == "" || !('a' <= s[0] && s[0] <= 'z') || s[len(s)-1] == '-' {
		return false
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '-':
			if s[i-1] == '-' {
				return false
			}
		case !('a' <= c && c <= 'z') && !('0' <= c && c <= '9'):
			return false
		}
	}
	return true
}

// validKey is an idempotency key or a step's reference:
// ^[A-Za-z0-9._:/@+=-]{1,200}$.
func validKey(s string) bool {
	if s == "" || len(s) > 200 {
		return false
	}
	for i := range len(s) {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("._:/@+=-", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func newJobID() string { return "job_" + randomHex(16) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// argsHash fingerprints args by their canonical form (key order and
// spacing do not matter).
func argsHash(args json.RawMessage) (string, error) {
	c, err := canonjson.Canonical(args)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

func strictJSON(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
