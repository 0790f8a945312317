package admin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// SignIns stores each source's record of sign-in attempts (the admin
// table; contract suite in admintest). Save is conditional, so concurrent
// attempts from one source are serialized and none escapes the count.
type SignIns interface {
	// SignIn reads a source's record (the zero record, Version 0, for a
	// source never seen).
	SignIn(ctx context.Context, source string) (SignInRecord, error)
	// SaveSignIn writes next if the stored record is still prev
	// (prev.Version), else ErrSignInChanged; the stored version becomes
	// prev.Version+1.
	SaveSignIn(ctx context.Context, source string, prev, next SignInRecord) error
}

// ErrSignInChanged is a SaveSignIn that lost a race with another attempt
// from the same source: read again.
var ErrSignInChanged = errors.New("admin: the source's sign-in record changed concurrently")

// SignInRecord is what a source has done since its last successful
// sign-in: its counted attempts, and the lock those earned.
type SignInRecord struct {
	// Failures counts attempts since the last success (each attempt is
	// counted when it starts, so a burst cannot outrun the count).
	Failures int
	// LastAt is the last attempt; a record idle for Config.SignIn.Forget
	// starts over.
	LastAt time.Time
	// LockedUntil refuses the source's attempts, right key or wrong, until
	// then.
	LockedUntil time.Time
	// Expires is when the record may be dropped (the table's TTL): its
	// lock passed and its failures forgotten.
	Expires time.Time
	// Version is the stored record's version (0: none stored).
	Version int64
}

// Sign-in limit defaults (docs/operations.md "Console sign-in").
const (
	// DefaultSignInFree attempts from one source are free; the next ones
	// wait.
	DefaultSignInFree = 5
	// DefaultSignInBackoff is the first wait; each further failure doubles
	// it.
	DefaultSignInBackoff = 2 * time.Second
	// DefaultSignInMaxBackoff caps the wait: after a lock-out a source
	// gets one attempt per 15 minutes at most.
	DefaultSignInMaxBackoff = 15 * time.Minute
	// DefaultSignInForget is how long a source must stay quiet for its
	// failures to be forgotten.
	DefaultSignInForget = 24 * time.Hour
)

// SignInLimit decides, for one source, whether an attempt may check a key:
// the first Free attempts since a success may; each later one waits
// Backoff × 2^(n−Free), at most MaxBackoff; a success starts over. It is
// per source (a caller's address), so an attacker's failures never lock
// out a right key from elsewhere.
type SignInLimit struct {
	Free       int
	Backoff    time.Duration
	MaxBackoff time.Duration
	Forget     time.Duration
}

// WithDefaults fills unset fields.
func (l SignInLimit) WithDefaults() SignInLimit {
	if l.Free == 0 {
		l.Free = DefaultSignInFree
	}
	if l.Backoff == 0 {
		l.Backoff = DefaultSignInBackoff
	}
	if l.MaxBackoff == 0 {
		l.MaxBackoff = DefaultSignInMaxBackoff
	}
	if l.Forget == 0 {
		l.Forget = DefaultSignInForget
	}
	return l
}

// Validate checks the limit.
func (l SignInLimit) Validate() error {
	switch {
	case l.Free < 1 || l.Free > 100:
		return fmt.Errorf("admin: %d free sign-in attempts must be 1..100", l.Free)
	case l.Backoff < 100*time.Millisecond || l.Backoff > time.Hour:
		return fmt.Errorf("admin: sign-in backoff %s must be 100ms..1h", l.Backoff)
	case l.MaxBackoff < l.Backoff || l.MaxBackoff > 24*time.Hour:
		return fmt.Errorf("admin: sign-in max backoff %s must be %s..24h", l.MaxBackoff, l.Backoff)
	case l.Forget < l.MaxBackoff:
		return fmt.Errorf("admin: sign-in failures forgotten after %s must be at least the max backoff %s", l.Forget, l.MaxBackoff)
	}
	return nil
}

// Attempt counts an attempt at now into rec: refused (with how long to
// wait) while the source is locked, else allowed, and the record to store
// first (its lock already set for the attempt after, should this one fail).
func (l SignInLimit) Attempt(rec SignInRecord, now time.Time) (next SignInRecord, allowed bool, wait time.Duration) {
	if now.Before(rec.LockedUntil) {
		return rec, false, rec.LockedUntil.Sub(now)
	}
	next = rec
	if !rec.LastAt.IsZero() && now.Sub(rec.LastAt) >= l.Forget {
		next.Failures = 0
	}
	next.Failures++
	next.LastAt = now
	if over := next.Failures - l.Free; over >= 0 {
		next.LockedUntil = now.Add(l.backoff(over))
	}
	next.Expires = later(next.LastAt.Add(l.Forget), next.LockedUntil)
	return next, true, 0
}

// backoff is the wait after the (Free+over)-th attempt.
func (l SignInLimit) backoff(over int) time.Duration {
	d := l.Backoff
	for range over {
		if d >= l.MaxBackoff/2 {
			return l.MaxBackoff
		}
		d *= 2
	}
	return min(d, l.MaxBackoff)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Gate is the sign-in limit over its store: Begin counts an attempt (or
// refuses it), Succeeded starts the source over.
type Gate struct {
	Limit SignInLimit
	Store SignIns
	Now   func() time.Time

	// verified spares a right bearer key the record's read for
	// BearerCacheTTL after one found its source not waiting.
	verified verifiedKeys
}

// ErrLocked refuses an attempt from a locked source.
type ErrLocked struct{ Wait time.Duration }

func (e *ErrLocked) Error() string {
	return fmt.Sprintf("too many failed sign-ins from this address: try again in %s", e.Wait.Round(time.Second))
}

// RetryAfter is the wait in whole seconds (at least 1), for Retry-After.
func (e *ErrLocked) RetryAfter() int { return max(1, int((e.Wait+time.Second-1)/time.Second)) }

// beginTries bounds the read-decide-write loop under a burst from one
// source (each lost race means another attempt was counted).
const beginTries = 8

// Begin counts an attempt from source before its key is checked: nil to go
// ahead, an *ErrLocked to refuse, or the store's error (the caller refuses
// too: an unavailable store must not mean an unlimited one).
func (g *Gate) Begin(ctx context.Context, source string) error {
	// The attempt may lock source: no key it sent before skips the lock.
	g.verified.forget(source)
	for range beginTries {
		rec, err := g.Store.SignIn(ctx, source)
		if err != nil {
			return err
		}
		next, ok, wait := g.Limit.Attempt(rec, g.Now())
		if !ok {
			return &ErrLocked{Wait: wait}
		}
		switch err := g.Store.SaveSignIn(ctx, source, rec, next); {
		case err == nil:
			return nil
		case !errors.Is(err, ErrSignInChanged):
			return err
		}
	}
	return &ErrLocked{Wait: g.Limit.Backoff}
}

// Succeeded starts source over after a right key: its failures and lock
// are cleared (an update, like everything in the admin table).
func (g *Gate) Succeeded(ctx context.Context, source string) error {
	for range beginTries {
		rec, err := g.Store.SignIn(ctx, source)
		if err != nil || rec.Failures == 0 && rec.LockedUntil.IsZero() {
			return err
		}
		now := g.Now()
		err = g.Store.SaveSignIn(ctx, source, rec, SignInRecord{LastAt: now, Expires: now})
		if !errors.Is(err, ErrSignInChanged) {
			return err
		}
	}
	return ErrSignInChanged
}

// ErrWrongKey refuses a bearer key that is not an active admin key (the
// attempt was counted against its source).
var ErrWrongKey = errors.New("admin: not an active admin key")

// Bearer checks "Authorization: Bearer <key>" from source under the
// sign-in limit, as a console sign-in is: a wrong key counts against the
// source (Begin; ErrWrongKey, or *ErrLocked once the source must wait),
// and while the source waits no key from it is taken, right or wrong
// (*ErrLocked), so guessing keys against /admin or /console with the
// header is no faster than through the sign-in form (the two share the
// source's record). A right key costs one read of the record per
// BearerCacheTTL per source and instance (a burst of console requests is
// one read, not one each); it starts the source over after failures. An
// attempt Begin counts drops what this Gate remembered of the source, so a
// lock earned through it holds at once; a lock earned through another
// instance (or the other of /admin and /console) holds within
// BearerCacheTTL. The active keys are compared
// on every request, remembered or not. A record that cannot be read does
// not refuse a right key (the operator's tools keep working while the admin
// table is unwell) and is not remembered; a wrong key is refused either
// way.
func (g *Gate) Bearer(ctx context.Context, source string, keys Keys, authz string) error {
	if !Authorized(ctx, keys, authz) {
		var locked *ErrLocked
		if err := g.Begin(ctx, source); errors.As(err, &locked) {
			return locked
		}
		return ErrWrongKey
	}
	now := g.Now()
	if g.verified.fresh(source, authz, now) {
		return nil
	}
	rec, err := g.Store.SignIn(ctx, source)
	if err != nil {
		return nil
	}
	if rec.LockedUntil.After(now) {
		return &ErrLocked{Wait: rec.LockedUntil.Sub(now)}
	}
	if rec.Failures > 0 {
		_ = g.Succeeded(ctx, source) // best effort: the count stays until a later success clears it
	}
	g.verified.remember(source, authz, now)
	return nil
}

// Source is the limit's key for a caller's address: API Gateway's
// sourceIp (the TCP peer, not a header a client may set), an IPv6 address
// by its /64 (one host's share), hashed so the table holds no address.
func Source(ip string) string {
	a, err := netip.ParseAddr(ip)
	switch {
	case err != nil:
		ip = "unknown"
	case a.Is4() || a.Is4In6():
		ip = a.Unmap().String()
	default:
		p, _ := a.Prefix(64)
		ip = p.String()
	}
	sum := sha256.Sum256([]byte("evp-signin|" + ip))
	return hex.EncodeToString(sum[:16])
}
