package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"strings"
)

func (a *API) authorized(ctx context.Context, authz string) bool {
	return Authorized(ctx, a.d.Keys, authz)
}

// Authorized checks "Bearer <key>" against every active key in constant
// time: both sides are hashed first so neither the length nor the content
// of a key leaks through timing, and every key is compared (no early
// exit). A miss triggers one rate-limited reload, for a key rotated moments
// ago. The JSON API and the console both ask it.
func Authorized(ctx context.Context, keys Keys, authz string) bool {
	scheme, token, ok := strings.Cut(strings.TrimSpace(authz), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	token = strings.TrimSpace(token)
	if token == "" || keys == nil {
		return false
	}
	if matchAny(token, keys.Active(ctx)) {
		return true
	}
	if reloaded, changed := keys.Reload(ctx); changed {
		return matchAny(token, reloaded)
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
