package envelope

import (
	"crypto/sha256"
	"encoding/hex"
)

// SHA256Hex is the hex SHA-256 of b (claim-check integrity).
func SHA256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
