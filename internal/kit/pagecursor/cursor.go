// Package pagecursor encodes the opaque page cursors handed to API and CLI
// callers: base64url JSON of whatever position the producer needs to resume.
// Callers pass them back verbatim and must not build them.
package pagecursor

import (
	"encoding/base64"
	"encoding/json"
	"errors"
)

// ErrInvalid is returned for a cursor that was not produced by Encode.
var ErrInvalid = errors.New("invalid cursor")

// Encode returns the cursor for position v.
func Encode(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Decode reads a cursor into v; any malformed input is ErrInvalid.
func Decode(s string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return errors.Join(ErrInvalid, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return errors.Join(ErrInvalid, err)
	}
	return nil
}
