package console

import (
	"errors"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/siteswarm/eventplatform/internal/admin"
)

// login is the sign-in form (GET) and the key check that starts a
// session (POST). Every key checked counts against the caller's address
// first (admin.Gate): a few are free, then each waits twice as long as the
// last, and while an address waits no key is checked from it, right or
// wrong. Other addresses are not affected, so an attacker cannot lock an
// operator out; a right key starts its address over.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.FormValue("next"))
	p := page{Title: "Sign in", Data: map[string]string{"Next": next}}
	if r.Method != http.MethodPost {
		c.render(w, "login", p)
		return
	}
	ctx := r.Context()
	key := strings.TrimSpace(r.PostFormValue("key"))
	if key == "" {
		w.WriteHeader(http.StatusBadRequest)
		p.Error = "Enter an admin key."
		c.render(w, "login", p)
		return
	}
	source := admin.Source(r.RemoteAddr)
	var locked *admin.ErrLocked
	switch err := c.gate.Begin(ctx, source); {
	case errors.As(err, &locked):
		c.d.Log.WarnContext(ctx, "console: sign-in refused: too many failures from this address", "sourceIp", r.RemoteAddr, "retryAfterSeconds", locked.RetryAfter())
		w.Header().Set("Retry-After", strconv.Itoa(locked.RetryAfter()))
		w.WriteHeader(http.StatusTooManyRequests)
		p.Error = "Too many failed sign-ins from this address. Try again in " + strconv.Itoa(locked.RetryAfter()) + " s."
		c.render(w, "login", p)
		return
	case err != nil:
		c.unavailable(w, r, p, "console: the sign-in limit cannot be read", err)
		return
	}
	if !admin.Authorized(ctx, c.d.Keys, "Bearer "+key) {
		c.d.Log.WarnContext(ctx, "console: sign-in with a key that is not active", "sourceIp", r.RemoteAddr)
		w.WriteHeader(http.StatusUnauthorized)
		p.Error = "That is not an active admin key."
		c.render(w, "login", p)
		return
	}
	if err := c.gate.Succeeded(ctx, source); err != nil {
		// The key is right; the address's count stays until a later
		// success clears it.
		c.d.Log.WarnContext(ctx, "console: clearing the address's failed sign-ins failed", "error", err.Error())
	}
	now := c.d.Now()
	sid, expires := newSessionID(), now.Add(c.cfg.SessionTTL)
	if err := c.d.Sessions.StartSession(ctx, admin.Session{ID: storeID(sid), Started: now, Expires: expires, LastSeen: now, Source: source}); err != nil {
		c.unavailable(w, r, p, "console: recording the session failed", err)
		return
	}
	c.d.Log.InfoContext(ctx, "console: signed in", "sourceIp", r.RemoteAddr, "sessionExpires", expires.UTC().Format(time.RFC3339))
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: cookieValue(key, sid, expires), Path: Prefix,
		MaxAge: int(c.cfg.SessionTTL.Seconds()), HttpOnly: true, Secure: !c.cfg.InsecureCookie, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// unavailable answers 503 when the admin table fails: a sign-in is
// refused rather than let through unlimited or unrecorded.
func (c *Console) unavailable(w http.ResponseWriter, r *http.Request, p page, msg string, err error) {
	c.d.Log.ErrorContext(r.Context(), msg, "error", err.Error())
	w.WriteHeader(http.StatusServiceUnavailable)
	p.Error = "Sign-in is unavailable right now; try again in a moment."
	c.render(w, "login", p)
}

// logout ends the session server-side (every copy of the cookie stops
// working at once) and clears the cookie. If the store cannot record the
// sign-out it says so (503) and keeps the cookie: a sign-out that did not
// happen must not look as if it had.
func (c *Console) logout(w http.ResponseWriter, r *http.Request, s session) {
	if s.sid != "" {
		if err := c.d.Sessions.EndSession(r.Context(), storeID(s.sid), c.d.Now()); err != nil {
			c.d.Log.ErrorContext(r.Context(), "console: recording the sign-out failed", "error", err.Error())
			w.WriteHeader(http.StatusServiceUnavailable)
			c.render(w, "error", page{Title: "Sign-out failed", CSRF: s.csrf(), Error: "The sign-out could not be recorded, so the session still works. Try again in a moment."})
			return
		}
		c.d.Log.InfoContext(r.Context(), "console: signed out")
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: Prefix, MaxAge: -1, HttpOnly: true, Secure: !c.cfg.InsecureCookie, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
}

// safeNext is where a sign-in may send the browser: a path of the console
// on this origin, else the console's front page. The path is cleaned
// BEFORE it is checked ("/console/../\evil.com" cleans to "/\evil.com",
// which a browser takes for https://evil.com/), and backslashes, control
// characters, scheme or host parts and "//" are refused outright, raw or
// percent-encoded; a fragment is dropped.
func safeNext(next string) string {
	if next == "" || strings.ContainsAny(next, "\\") || strings.HasPrefix(next, "//") || strings.IndexFunc(next, unicode.IsControl) >= 0 {
		return Prefix
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") {
		return Prefix
	}
	if strings.ContainsAny(u.Path, "\\") || strings.IndexFunc(u.Path, unicode.IsControl) >= 0 {
		return Prefix // %5C, %0A and friends, decoded
	}
	clean := path.Clean(u.Path)
	if clean != Prefix && !strings.HasPrefix(clean, Prefix+"/") {
		return Prefix
	}
	return (&url.URL{Path: clean, RawQuery: u.RawQuery}).String()
}
