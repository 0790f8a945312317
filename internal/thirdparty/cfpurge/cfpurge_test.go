package cfpurge_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/cachepurge"
	"github.com/siteswarm/eventplatform/internal/secret"
	"github.com/siteswarm/eventplatform/internal/thirdparty/cfpurge"
	"github.com/siteswarm/eventplatform/internal/thirdparty/cfpurge/cfpurgetest"
)

func TestPurgeAgainstTheStandIn(t *testing.T) {
	t.Parallel()
	srv := cfpurgetest.New(t, "tok-1", "z1")
	c := &cfpurge.Client{BaseURL: srv.BaseURL(), Tokens: secret.List{"tok-1"}}
	ctx := context.Background()

	srv.Script("z1", cfpurgetest.Answer{Status: 200, Headers: map[string]string{"Ratelimit": `"default";r=7;t=30`, "Ratelimit-Policy": `"default";q=100;w=60`}})
	res, err := c.Purge(ctx, cachepurge.Call{Zone: "z1", Tags: []string{"tenant:acme"}})
	require.NoError(t, err)
	require.Equal(t, cachepurge.RateLimit{Remaining: 7, Reset: 30 * time.Second, Known: true, Quota: 100, Window: time.Minute}, res.RateLimit)
	require.Equal(t, []string{"tenant:acme"}, srv.Calls()[0].Tags)

	for name, tc := range map[string]struct {
		client *cfpurge.Client
		zone   string
		script *cfpurgetest.Answer
		status int
		codes  []int
		retry  time.Duration
	}{
		"wrong token":   {&cfpurge.Client{BaseURL: srv.BaseURL(), Tokens: secret.List{"nope"}}, "z1", nil, 403, []int{10000}, 0},
		"unknown zone":  {c, "z9", nil, 404, []int{7003}, 0},
		"429":           {c, "z1", &cfpurgetest.Answer{Status: 429, RetryAfter: "12"}, 429, []int{971}, 12 * time.Second},
		"success:false": {c, "z1", &cfpurgetest.Answer{SuccessFalse: true}, 200, []int{1134}, 0},
	} {
		if tc.script != nil {
			srv.Script(tc.zone, *tc.script)
		}
		_, err := tc.client.Purge(ctx, cachepurge.Call{Zone: tc.zone, Tags: []string{"tenant:acme"}})
		var ae *cachepurge.APIError
		require.True(t, errors.As(err, &ae), "%s: %v", name, err)
		require.Equal(t, tc.status, ae.Status, name)
		require.Equal(t, tc.codes, ae.Codes, name)
		require.Equal(t, tc.retry, ae.RetryAfter, name)
		require.NotEmpty(t, ae.Message, name)
	}

	srv.Close()
	_, err = c.Purge(ctx, cachepurge.Call{Zone: "z1", Tags: []string{"tenant:acme"}})
	var ae *cachepurge.APIError
	require.Error(t, err)
	require.False(t, errors.As(err, &ae), "a network failure is not an API answer (it is retried)")
}

// Retry-After is read as bounded: a number is capped before it becomes a
// duration (9223372037 s overflowed into a negative wait), a number too
// large to parse is the cap, not 0, and a far HTTP date is the cap too
// (issue 21 #9).
func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"12", 12 * time.Second},
		{" 3 ", 3 * time.Second},
		{"0", 0},
		{"007", 7 * time.Second},
		{"-1", 0},
		{"+5", 0},
		{"1.5", 0},
		{"1e3", 0},
		{"soon", 0},
		{"86400", cfpurge.MaxWait},
		{"86401", cfpurge.MaxWait},
		{"9223372037", cfpurge.MaxWait},
		{"9223372036854775807", cfpurge.MaxWait},
		{"99999999999999999999", cfpurge.MaxWait},
		{"Wed, 02 Dec 2026 12:00:30 GMT", 30 * time.Second},
		{"Wed, 02 Dec 2026 11:00:00 GMT", 0},
		{"Wed, 02 Dec 2026 12:00:00 GMT", 0},
		{"Fri, 31 Dec 9999 23:59:59 GMT", cfpurge.MaxWait},
		{"Thursday, 03-Dec-26 12:00:00 GMT", cfpurge.MaxWait},
		{"Thu Dec  3 00:00:00 2026", 12 * time.Hour},
	} {
		require.Equal(t, c.want, cfpurge.RetryAfter(c.in, now), "%q", c.in)
	}
}

// Every wait and count the rate-limit headers carry is bounded and never
// negative (issue 21 #8/#9: the pacer trusted them).
func TestRateLimitOf(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	require.False(t, cfpurge.RateLimitOf(h).Known)
	for _, c := range []struct {
		name    string
		headers map[string]string
		want    cachepurge.RateLimit
	}{
		{"split", map[string]string{"Ratelimit-Remaining": "0", "Ratelimit-Reset": "20"},
			cachepurge.RateLimit{Remaining: 0, Reset: 20 * time.Second, Known: true}},
		{"structured names", map[string]string{"Ratelimit": "remaining=5, reset=9"},
			cachepurge.RateLimit{Remaining: 5, Reset: 9 * time.Second, Known: true}},
		{"structured", map[string]string{"Ratelimit": `"default";r=50;t=30`, "Ratelimit-Policy": `"default";q=100;w=60`},
			cachepurge.RateLimit{Remaining: 50, Reset: 30 * time.Second, Known: true, Quota: 100, Window: time.Minute}},
		{"reset overflows", map[string]string{"Ratelimit-Remaining": "0", "Ratelimit-Reset": "9223372037"},
			cachepurge.RateLimit{Known: true, Reset: cfpurge.MaxWait}},
		{"reset too large to parse", map[string]string{"Ratelimit": "r=0;t=99999999999999999999"},
			cachepurge.RateLimit{Known: true, Reset: cfpurge.MaxWait}},
		{"window overflows", map[string]string{"Ratelimit-Policy": "q=1;w=9223372037"},
			cachepurge.RateLimit{Known: true, Quota: 1, Window: cfpurge.MaxWait}},
		{"negative numbers are not read", map[string]string{"Ratelimit-Remaining": "-1", "Ratelimit-Reset": "-5", "Ratelimit-Policy": "q=-1;w=-60"},
			cachepurge.RateLimit{}},
		{"huge quota", map[string]string{"Ratelimit-Policy": "q=99999999999999999999;w=1"},
			cachepurge.RateLimit{Known: true, Quota: 1 << 30, Window: time.Second}},
	} {
		h := http.Header{}
		for k, v := range c.headers {
			h.Set(k, v)
		}
		require.Equal(t, c.want, cfpurge.RateLimitOf(h), c.name)
	}
}

func TestValidateBaseURL(t *testing.T) {
	t.Parallel()
	require.NoError(t, cfpurge.ValidateBaseURL(cfpurge.DefaultBaseURL))
	require.NoError(t, cfpurge.ValidateBaseURL("http://127.0.0.1:3000/__cloudflare"))
	require.Error(t, cfpurge.ValidateBaseURL("http://api.example.com"))
	require.Error(t, cfpurge.ValidateBaseURL("ftp://x"))
	require.Error(t, cfpurge.ValidateBaseURL("/relative"))
}
