package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/siteswarm/eventplatform/internal/admin"
)

// sessionCookie holds a console session: "<sid>.<expiry unix>.<mac>". The
// sid is 256 random bits minted at sign-in, so two sign-ins never share a
// cookie or a CSRF token; the MAC (keyed by the admin key that signed in,
// so rotating the key out ends its sessions) covers sid and expiry; and
// the session is recorded server-side (admin.Sessions, under a digest of
// the sid), so a sign-out ends it for every copy of the cookie.
const sessionCookie = "evp_console"

// Session lifetime defaults (docs/operations.md "Console sessions").
const (
	// DefaultSessionTTL is a session's absolute lifetime.
	DefaultSessionTTL = 8 * time.Hour
	// DefaultSessionIdle ends a session nobody used for this long.
	DefaultSessionIdle = time.Hour
)

func mac(key, msg string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

// session is an authenticated console request: by cookie (then state
// changes need the CSRF token) or by bearer key (scripts, tests).
type session struct {
	key string // the admin key it proves
	sid string // the cookie's session id ("" for a bearer request)
}

// csrf is the token a cookie session's forms carry: bound to its session
// id, so it dies with the session and is never another sign-in's.
func (s session) csrf() string {
	if s.sid == "" {
		return ""
	}
	return mac(s.key, "csrf|"+s.sid)
}

// storeID is the session's id in the store: a digest of the sid, so the
// table holds nothing a browser could present.
func storeID(sid string) string {
	sum := sha256.Sum256([]byte("evp-console-session|" + sid))
	return hex.EncodeToString(sum[:])
}

// newSessionID is 256 random bits, URL-safe (no '.': it is the cookie's
// separator).
func newSessionID() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// cookieValue is the signed cookie of a session.
func cookieValue(key, sid string, expires time.Time) string {
	exp := strconv.FormatInt(expires.Unix(), 10)
	return sid + "." + exp + "." + mac(key, "session|"+sid+"|"+exp)
}

// errNotSignedIn is a request without a live session or a right key;
// anything else from authenticate means the session store failed (503: a
// sign-out must not be forgotten because the store could not be read).
var errNotSignedIn = errors.New("console: not signed in")

// authenticate checks r: a bearer key, else a session cookie whose MAC
// verifies under an active key, unexpired, and live in the store (not
// signed out, not idle). Activity is recorded at most every touchEvery.
func (c *Console) authenticate(ctx context.Context, r *http.Request) (session, error) {
	if authz := r.Header.Get("Authorization"); authz != "" {
		// Counted like a sign-in (admin.Gate.Bearer): a locked source
		// gets its *admin.ErrLocked.
		var locked *admin.ErrLocked
		switch err := c.gate.Bearer(ctx, admin.Source(r.RemoteAddr), c.d.Keys, authz); {
		case err == nil:
			_, token, _ := strings.Cut(strings.TrimSpace(authz), " ")
			return session{key: strings.TrimSpace(token)}, nil
		case errors.As(err, &locked):
			return session{}, locked
		}
		return session{}, errNotSignedIn
	}
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return session{}, errNotSignedIn
	}
	parts := strings.Split(ck.Value, ".")
	if len(parts) != 3 || len(parts[0]) != 64 {
		return session{}, errNotSignedIn
	}
	sid, exp, sum := parts[0], parts[1], parts[2]
	unix, err := strconv.ParseInt(exp, 10, 64)
	now := c.d.Now()
	if err != nil || now.Unix() >= unix {
		return session{}, errNotSignedIn
	}
	key := ""
	for _, k := range c.d.Keys.Active(ctx) {
		if k != "" && hmac.Equal([]byte(sum), []byte(mac(k, "session|"+sid+"|"+exp))) {
			key = k
		}
	}
	if key == "" {
		return session{}, errNotSignedIn
	}
	id := storeID(sid)
	stored, err := c.d.Sessions.Session(ctx, id)
	switch {
	case errors.Is(err, admin.ErrNoSession):
		return session{}, errNotSignedIn
	case err != nil:
		return session{}, err
	case !stored.Live(now, c.cfg.SessionIdle):
		return session{}, errNotSignedIn
	}
	if now.Sub(stored.LastSeen) >= c.cfg.touchEvery() {
		switch err := c.d.Sessions.TouchSession(ctx, id, now); {
		case errors.Is(err, admin.ErrNoSession):
			return session{}, errNotSignedIn // signed out meanwhile
		case err != nil:
			// The session was live a moment ago: serve, and let the next
			// request record the activity.
			c.d.Log.WarnContext(ctx, "console: recording session activity failed", "error", err.Error())
		}
	}
	return session{key: key, sid: sid}, nil
}

// csrfOK checks a state-changing request: bearer requests carry no
// ambient credential; cookie requests must echo the session's token.
func (s session) csrfOK(r *http.Request) bool {
	if s.sid == "" {
		return true
	}
	got := r.PostFormValue("csrf")
	return got != "" && hmac.Equal([]byte(got), []byte(s.csrf()))
}
