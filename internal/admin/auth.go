package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"strings"
)

// authorized checks "Bearer <key>" against every active key in constant
// time: both sides are hashed first so neither the length nor the content
// of a key leaks through timing, and every key is compared (no early
// exit). A miss triggers one rate-limited reload, for a key rotated moments
// ago.
func (a *API) authorized(ctx context.Context, authz string) bool {
	scheme, token, ok := strings.Cut(strings.TrimSpace(authz), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	token = strings.TrimSpace(token)
	if token == "" || a.d.Keys == nil {
		return false
	}
	if matchAny(token, a.d.Keys.Active(ctx)) {
		return true
	}
	if keys, changed := a.d.Keys.Reload(ctx); changed {
		return matchAny(token, keys)
	}
	return false
}

func matchAny(token string, keys []string) bool {
	got := sha256.Sum256([]byte(token))
	match := 0
	for _, k := range keys {
		if k == "" {
			continue
		}
		want := sha256.Sum256([]byte(k))
		match |= subtle.ConstantTimeCompare(got[:], want[:])
	}
	return match == 1
}
