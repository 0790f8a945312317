package admin

import (
	"context"
	"errors"
	"time"
)

// Sessions stores console sessions server-side (the admin table; contract
// suite in admintest), so a sign-out ends a session wherever its cookie
// is, not just in the browser that signed out. IDs are digests of the
// cookie's random session id: the table holds nothing a browser could
// present.
type Sessions interface {
	// StartSession records a new session (ErrSessionExists for an ID
	// already used).
	StartSession(ctx context.Context, s Session) error
	// Session reads a session as stored, ended or not (ErrNoSession for
	// none), with a strongly consistent read: a sign-out is seen at once.
	Session(ctx context.Context, id string) (Session, error)
	// TouchSession records activity at `at` on a session not ended
	// (ErrNoSession otherwise).
	TouchSession(ctx context.Context, id string, at time.Time) error
	// EndSession ends a session at `at` (a sign-out; idempotent, and an
	// update, never a delete).
	EndSession(ctx context.Context, id string, at time.Time) error
}

// Session errors.
var (
	ErrNoSession     = errors.New("admin: no such console session")
	ErrSessionExists = errors.New("admin: the console session id is taken")
)

// Session is one console sign-in.
type Session struct {
	ID string
	// Started is the sign-in; Expires ends the session whatever happens
	// (its absolute lifetime, also the item's TTL).
	Started, Expires time.Time
	// LastSeen is the last request (updated at most every few minutes),
	// for the idle limit.
	LastSeen time.Time
	// Ended is the sign-out (zero while the session is live).
	Ended time.Time
	// Source is the sign-in's address key (Source), for the audit log.
	Source string
}

// Live reports whether the session may be used at now, given an idle
// limit (0: none).
func (s Session) Live(now time.Time, idle time.Duration) bool {
	switch {
	case !s.Ended.IsZero(), !now.Before(s.Expires):
		return false
	case idle > 0 && now.Sub(s.LastSeen) >= idle:
		return false
	}
	return true
}
