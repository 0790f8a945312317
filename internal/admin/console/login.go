package console

import (
	"net/http"
	"net/url"
	"path"
	"strings"
	"unicode"

	"github.com/siteswarm/eventplatform/internal/admin"
)

// login is the sign-in form (GET) and the key check that starts a
// session (POST).
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.FormValue("next"))
	p := page{Title: "Sign in", Data: map[string]string{"Next": next}}
	if r.Method == http.MethodPost {
		key := strings.TrimSpace(r.PostFormValue("key"))
		if key != "" && admin.Authorized(r.Context(), c.d.Keys, "Bearer "+key) {
			http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: newSession(key, c.d.Now()), Path: Prefix,
				MaxAge: int(sessionTTL.Seconds()), HttpOnly: true, Secure: !c.cfg.InsecureCookie, SameSite: http.SameSiteStrictMode})
			http.Redirect(w, r, next, http.StatusSeeOther)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		p.Error = "That is not an active admin key."
	}
	c.render(w, "login", p)
}

// logout ends the session: the cookie is cleared.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
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
