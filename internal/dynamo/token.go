package dynamo

import (
	"encoding/base64"
	"encoding/json"
)

// Page cursors handed to callers are opaque tokens: base64url JSON of
// whatever position the adapter needs. Callers must not build them.

func encodeToken(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func decodeToken(s string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
