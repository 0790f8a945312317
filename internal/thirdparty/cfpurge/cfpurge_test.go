package cfpurge_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/purge"
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
	res, err := c.Purge(ctx, purge.Call{Zone: "z1", Tags: []string{"tenant:acme"}})
	require.NoError(t, err)
	require.Equal(t, purge.RateLimit{Remaining: 7, Reset: 30 * time.Second, Known: true, Quota: 100, Window: time.Minute}, res.RateLimit)
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
		_, err := tc.client.Purge(ctx, purge.Call{Zone: tc.zone, Tags: []string{"tenant:acme"}})
		var ae *purge.APIError
		require.True(t, errors.As(err, &ae), "%s: %v", name, err)
		require.Equal(t, tc.status, ae.Status, name)
		require.Equal(t, tc.codes, ae.Codes, name)
		require.Equal(t, tc.retry, ae.RetryAfter, name)
		require.NotEmpty(t, ae.Message, name)
	}

	srv.Close()
	_, err = c.Purge(ctx, purge.Call{Zone: "z1", Tags: []string{"tenant:acme"}})
	var ae *purge.APIError
	require.Error(t, err)
	require.False(t, errors.As(err, &ae), "a network failure is not an API answer (it is retried)")
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"":                              0,
		"12":                            12 * time.Second,
		" 3 ":                           3 * time.Second,
		"-1":                            0,
		"soon":                          0,
		"Wed, 02 Dec 2026 12:00:30 GMT": 30 * time.Second,
		"Wed, 02 Dec 2026 11:00:00 GMT": 0,
	} {
		require.Equal(t, want, cfpurge.RetryAfter(in, now), in)
	}
}

func TestRateLimitOf(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	require.False(t, cfpurge.RateLimitOf(h).Known)
	h.Set("Ratelimit-Remaining", "0")
	h.Set("Ratelimit-Reset", "20")
	require.Equal(t, purge.RateLimit{Remaining: 0, Reset: 20 * time.Second, Known: true}, cfpurge.RateLimitOf(h))
	h = http.Header{}
	h.Set("Ratelimit", "remaining=5, reset=9")
	rl := cfpurge.RateLimitOf(h)
	require.True(t, rl.Known)
	require.Equal(t, 5, rl.Remaining)
}

func TestValidateBaseURL(t *testing.T) {
	t.Parallel()
	require.NoError(t, cfpurge.ValidateBaseURL(cfpurge.DefaultBaseURL))
	require.NoError(t, cfpurge.ValidateBaseURL("http://127.0.0.1:3000/__cloudflare"))
	require.Error(t, cfpurge.ValidateBaseURL("http://api.example.com"))
	require.Error(t, cfpurge.ValidateBaseURL("ftp://x"))
	require.Error(t, cfpurge.ValidateBaseURL("/relative"))
}
