package console

import (
	"net/http"
	"strings"

	"github.com/siteswarm/eventplatform/internal/admin"
)

// login is the sign-in form (GET) and the key check that starts a
// session (POST).
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	next := r.FormValue("next")
	if !strings.HasPrefix(next, Prefix) || strings.HasPrefix(next, "//") {
		next = Prefix
	}
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
