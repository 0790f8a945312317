package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"strings"
)

// bearer checks the request's key: nil, ErrWrongKey (no key, or not an
// active one), or *ErrLocked (its source must wait, Gate.Bearer). A
// request without an Authorization header is no guess and is not counted.
func (a *API) bearer(ctx context.Context, authz, sourceIP string) error {
	if strings.TrimSpace(authz) == "" {
		return ErrWrongKey
	}
	if a.gate == nil {
		if Authorized(ctx, a.d.Keys, authz) {
			return nil
		}
		return ErrWrongKey
	}
	return a.gate.Bearer(ctx, Source(sourceIP), a.d.Keys, authz)
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
