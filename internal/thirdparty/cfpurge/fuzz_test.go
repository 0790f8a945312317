package cfpurge_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/siteswarm/eventplatform/internal/thirdparty/cfpurge"
)

// FuzzRetryAfter: whatever the header says, the wait is between 0 and
// MaxWait, and a number of seconds within the cap is read exactly.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"", "0", "12", " 3 ", "-1", "+5", "1.5", "86400", "86401", "9223372037",
		"9223372036854775807", "99999999999999999999", "Wed, 02 Dec 2026 12:00:30 GMT", "Fri, 31 Dec 9999 23:59:59 GMT",
		"Thu, 01 Jan 1970 00:00:00 GMT", "Thursday, 03-Dec-26 12:00:00 GMT", "Thu Dec  3 00:00:00 2026", "\x00", "٣"} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d := cfpurge.RetryAfter(v, now)
		if d < 0 || d > cfpurge.MaxWait {
			t.Fatalf("RetryAfter(%q) = %s, outside [0, %s]", v, d, cfpurge.MaxWait)
		}
		tv := strings.TrimSpace(v)
		if n, err := strconv.ParseUint(tv, 10, 64); err == nil && tv != "" && tv[0] != '+' && n <= uint64(cfpurge.MaxWait/time.Second) {
			if d != time.Duration(n)*time.Second {
				t.Fatalf("RetryAfter(%q) = %s, want %d s", v, d, n)
			}
		}
	})
}

// FuzzRateLimitOf: whatever the rate-limit headers say, every wait is
// between 0 and MaxWait and no count is negative.
func FuzzRateLimitOf(f *testing.F) {
	for _, s := range [][4]string{
		{`"default";r=50;t=30`, `"default";q=100;w=60`, "", ""},
		{"remaining=5, reset=9", "q=1;w=86400", "", ""},
		{"", "q=1;w=9223372037", "0", "9223372037"},
		{"r=0;t=99999999999999999999", "q=99999999999999999999;w=-1", "-1", "-5"},
		{"r=;t=\"\"", ";;=;", " 7 ", "1.5"},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, rl, policy, remaining, reset string) {
		h := http.Header{}
		h.Set("Ratelimit", rl)
		h.Set("Ratelimit-Policy", policy)
		h.Set("Ratelimit-Remaining", remaining)
		h.Set("Ratelimit-Reset", reset)
		got := cfpurge.RateLimitOf(h)
		for _, d := range []time.Duration{got.Reset, got.Window} {
			if d < 0 || d > cfpurge.MaxWait {
				t.Fatalf("%q %q %q %q: wait %s outside [0, %s]", rl, policy, remaining, reset, d, cfpurge.MaxWait)
			}
		}
		if got.Remaining < 0 || got.Quota < 0 {
			t.Fatalf("%q %q %q %q: negative count %+v", rl, policy, remaining, reset, got)
		}
	})
}
