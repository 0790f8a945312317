package admin

import (
	"crypto/sha256"
	"strings"
	"sync"
	"time"
)

// Bearer key cache bounds (docs/operations.md "Failed sign-ins").
const (
	// BearerCacheTTL is how long a right key from an address that was not
	// waiting is taken from that address again without reading its
	// sign-in record: a console burst or a script's loop costs one read
	// per TTL, and a lock another instance puts on the address reaches a
	// key this one remembers within it.
	BearerCacheTTL = 30 * time.Second
	// BearerCacheSize bounds the (address, key) pairs remembered per
	// instance; past it a right key is checked with a read again (slower,
	// never wrong).
	BearerCacheSize = 1024
)

// verifiedKeys remembers which (source, key) pairs passed Gate.Bearer's
// sign-in check lately. Only right keys are remembered (a wrong one must
// be counted every time, for the back-off); the key is held as a digest,
// and the active keys are still compared on every request, so a key
// rotated out is refused at once however fresh its entry. The zero value is
// ready; safe for concurrent use.
type verifiedKeys struct {
	mu   sync.Mutex
	seen map[verifiedKey]time.Time // when the pair's record was last read clean
}

type verifiedKey struct {
	source string
	key    [sha256.Size]byte
}

func verifiedKeyOf(source, authz string) verifiedKey {
	return verifiedKey{source: source, key: sha256.Sum256([]byte(strings.TrimSpace(authz)))}
}

// fresh reports whether the pair was read clean less than BearerCacheTTL
// before now.
func (v *verifiedKeys) fresh(source, authz string, now time.Time) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	at, ok := v.seen[verifiedKeyOf(source, authz)]
	return ok && !now.Before(at) && now.Sub(at) < BearerCacheTTL
}

// remember records the pair as read clean at now. A full cache first drops
// its stale entries; if it is still full the pair is not remembered.
func (v *verifiedKeys) remember(source, authz string, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.seen == nil {
		v.seen = map[verifiedKey]time.Time{}
	}
	k := verifiedKeyOf(source, authz)
	if _, ok := v.seen[k]; !ok && len(v.seen) >= BearerCacheSize {
		for p, at := range v.seen {
			if now.Sub(at) >= BearerCacheTTL || now.Before(at) {
				delete(v.seen, p)
			}
		}
		if len(v.seen) >= BearerCacheSize {
			return
		}
	}
	v.seen[k] = now
}

// forget drops every pair of source: a wrong key from it was just counted,
// and if that locked it, no key it sent before may skip the lock.
func (v *verifiedKeys) forget(source string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for p := range v.seen {
		if p.source == source {
			delete(v.seen, p)
		}
	}
}

// size is the number of pairs held.
func (v *verifiedKeys) size() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.seen)
}
