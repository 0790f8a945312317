package envelope

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// ContentHash fingerprints what makes two publishes of one id "the same
// event": tenant, source, type, subject and the payload with insignificant
// whitespace removed. Key order is significant on purpose: providers retry
// with identical bytes, and re-ordering keys is a different serialisation we
// would rather flag as a conflict than guess about. The timestamp is left out
// because producers commonly stamp retries with the send time.
func ContentHash(ev Event) string {
	h := sha256.New()
	for _, s := range []string{ev.TenantID, ev.Source, ev.Type, ev.Subject} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, ev.Payload); err != nil {
		// Unreachable for a validated payload; hash the raw bytes.
		h.Write(ev.Payload)
	} else {
		h.Write(compact.Bytes())
	}
	return hex.EncodeToString(h.Sum(nil))
}

// SHA256Hex is the hex SHA-256 of b (claim-check integrity).
func SHA256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
