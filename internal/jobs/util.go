package jobs

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"

	"github.com/siteswarm/eventplatform/internal/kit/canonjson"
)

var (
	kindPattern  = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)
	jobIDPattern = regexp.MustCompile(`^job_[0-9a-f]{32}$`)
	keyPattern   = regexp.MustCompile(`^[A-Za-z0-9._:/@+=-]{1,200}$`)
)

// ValidJobID reports whether s is a job id the engine issues.
func ValidJobID(s string) bool { return jobIDPattern.MatchString(s) }

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
