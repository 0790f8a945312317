package console

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/siteswarm/eventplatform/internal/admin"
)

// sessionCookie holds a console session: "<expiry unix>.<mac>", the MAC
// keyed by the admin key that logged in, so rotating the key out ends
// its sessions, and nothing is stored server-side.
const sessionCookie = "evp_console"

// sessionTTL is how long a console session lasts.
const sessionTTL = 8 * time.Hour

func mac(key, msg string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

// session is an authenticated console request: by cookie (then state
// changes need the CSRF token) or by bearer key (scripts, tests).
type session struct {
	key    string // the admin key it proves
	cookie string // the cookie value ("" for a bearer request)
}

// csrf is the token a cookie session's forms carry.
func (s session) csrf() string {
	if s.cookie == "" {
		return ""
	}
	return mac(s.key, "csrf|"+s.cookie)
}

// newSession mints a cookie value for key.
func newSession(key string, now time.Time) string {
	exp := strconv.FormatInt(now.Add(sessionTTL).Unix(), 10)
	return exp + "." + mac(key, "session|"+exp)
}

// session authenticates r: a bearer key, else a valid unexpired session
// cookie.
func (c *Console) session(ctx context.Context, r *http.Request) (session, bool) {
	keys := c.d.Keys.Active(ctx)
	if authz := r.Header.Get("Authorization"); authz != "" {
		if admin.Authorized(ctx, c.d.Keys, authz) {
			_, token, _ := strings.Cut(strings.TrimSpace(authz), " ")
			return session{key: strings.TrimSpace(token)}, true
		}
		return session{}, false
	}
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return session{}, false
	}
	exp, sum, ok := strings.Cut(ck.Value, ".")
	unix, err := strconv.ParseInt(exp, 10, 64)
	if !ok || err != nil || c.d.Now().Unix() >= unix {
		return session{}, false
	}
	for _, k := range keys {
		if k != "" && hmac.Equal([]byte(sum), []byte(mac(k, "session|"+exp))) {
			return session{key: k, cookie: ck.Value}, true
		}
	}
	return session{}, false
}

// csrfOK checks a state-changing request: bearer requests carry no
// ambient credential; cookie requests must echo the session's token.
func (s session) csrfOK(r *http.Request) bool {
	if s.cookie == "" {
		return true
	}
	got := r.PostFormValue("csrf")
	return got != "" && hmac.Equal([]byte(got), []byte(s.csrf()))
}
