// Package cfpurge is the Cloudflare adapter of purge.API: one
// POST /zones/{zone}/purge_cache per call with the tags, bearer token
// authentication, and the answer read as Cloudflare gives it (a 200 whose
// body says success:false is a failure; errors[].code; Retry-After; the
// IETF RateLimit and RateLimit-Policy headers).
//
// It is plain net/http rather than cloudflare-go: the service needs one
// endpoint, its retry timing belongs to the queue (cloudflare-go v6 retries
// ten times by default and sleeps ignoring the context), and the rate-limit
// headers the pacer reads are first-class here. The base URL is
// configurable, so tests and the local stack point it at a local server.
//
// Adapter packages are named for the service they speak: dynamo
// (DynamoDB), sqsqueue, s3blob, snsalert, lambdainvoke, smsecret, cfpurge
// (Cloudflare).
package cfpurge

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/siteswarm/eventplatform/internal/cachepurge"
)

// DefaultBaseURL is Cloudflare's API.
const DefaultBaseURL = "https://api.cloudflare.com/client/v4"

// DefaultTimeout bounds one call.
const DefaultTimeout = 10 * time.Second

// maxBody bounds the response body read.
const maxBody = 1 << 20

// Tokens are the active API tokens (a cached secret); the first is used.
type Tokens interface {
	Active(ctx context.Context) []string
}

// Client calls the purge API.
type Client struct {
	// BaseURL is the API root (default DefaultBaseURL).
	BaseURL string
	Tokens  Tokens
	// HTTP sends the requests (default NewHTTPClient()).
	HTTP    *http.Client
	Timeout time.Duration
}

var _ cachepurge.API = (*Client)(nil)

// NewHTTPClient is the HTTP client calls use: TLS 1.2+, no redirects.
func NewHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// ValidateBaseURL accepts https, or http to a loopback host (tests, the
// local stack).
func ValidateBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return errors.New("not an absolute URL")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if h := u.Hostname(); h == "localhost" || h == "127.0.0.1" || h == "::1" {
			return nil
		}
		return errors.New("must be https (http only to a loopback host)")
	}
	return errors.New("must be https")
}

type answer struct {
	Success bool `json:"success"`
	Errors  []struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"errors"`
}

// Purge sends one purge call.
func (c *Client) Purge(ctx context.Context, call cachepurge.Call) (cachepurge.Response, error) {
	tokens := c.Tokens.Active(ctx)
	if len(tokens) == 0 {
		return cachepurge.Response{}, &cachepurge.APIError{Status: http.StatusUnauthorized, Message: "no API token"}
	}
	body, err := json.Marshal(map[string][]string{"tags": call.Tags})
	if err != nil {
		return cachepurge.Response{}, err
	}
	base := c.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+"/zones/"+url.PathEscape(call.Zone)+"/purge_cache", bytes.NewReader(body))
	if err != nil {
		return cachepurge.Response{}, err
	}
	req.Header.Set("Authorization", "Bearer "+tokens[0])
	req.Header.Set("Content-Type", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = NewHTTPClient()
	}
	resp, err := hc.Do(req)
	if err != nil {
		return cachepurge.Response{}, fmt.Errorf("purge API: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return cachepurge.Response{}, fmt.Errorf("purge API: read answer: %w", err)
	}
	rl := RateLimitOf(resp.Header)
	var a answer
	jerr := json.Unmarshal(raw, &a)
	if resp.StatusCode >= 200 && resp.StatusCode < 300 && jerr == nil && a.Success {
		return cachepurge.Response{RateLimit: rl}, nil
	}
	ae := &cachepurge.APIError{Status: resp.StatusCode, RetryAfter: RetryAfter(resp.Header.Get("Retry-After"), time.Now()), RateLimit: rl}
	var msgs []string
	for _, e := range a.Errors {
		ae.Codes = append(ae.Codes, e.Code)
		msgs = append(msgs, fmt.Sprintf("%d %s", e.Code, e.Message))
	}
	switch {
	case len(msgs) > 0:
		ae.Message = strings.Join(msgs, "; ")
	case jerr != nil:
		ae.Message = "the answer is not Cloudflare's JSON"
	case !a.Success:
		ae.Message = "success:false"
	}
	return cachepurge.Response{}, ae
}

// MaxWait bounds every wait an answer's headers may ask for (Retry-After,
// a rate-limit window or reset): one day. The headers are the API's, but
// a number is read before anything trusts it, so an absurd one becomes
// the cap instead of overflowing into a negative duration or reading as
// none; the purge consumer clamps further (purge.MaxDelay, the pacer).
const MaxWait = 24 * time.Hour

// RetryAfter reads a Retry-After header: delta seconds (digits only) or an
// HTTP date, at most MaxWait; 0 when absent, unreadable or in the past. A
// number of seconds too large for any integer is MaxWait, like any number
// past it: the API asked for a long wait, not for none.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if digits(v) {
		return Seconds(v)
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		// time.Sub saturates instead of overflowing; cap before rounding.
		return min(t.Sub(now), MaxWait).Round(time.Second)
	}
	return 0
}

// Seconds reads a non-negative decimal number of seconds, capped at
// MaxWait before it is multiplied into a duration (so no input
// overflows); 0 for anything that is not digits.
func Seconds(v string) time.Duration {
	if !digits(v) {
		return 0
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n > uint64(MaxWait/time.Second) {
		return MaxWait // too large to parse is too large to wait
	}
	return time.Duration(n) * time.Second
}

// digits reports whether v is one or more ASCII digits (RFC 9110's
// delay-seconds: no sign, no fraction, no spaces inside).
func digits(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return true
}

// RateLimitOf reads the IETF rate-limit headers in either form Cloudflare
// sends: structured (Ratelimit: "default";r=50;t=30 and
// Ratelimit-Policy: "default";q=100;w=60) or split
// (RateLimit-Remaining, RateLimit-Reset, RateLimit-Limit).
func RateLimitOf(h http.Header) cachepurge.RateLimit {
	var rl cachepurge.RateLimit
	if v := h.Get("Ratelimit"); v != "" {
		params := structured(v)
		if r, ok := params["r"]; ok {
			rl.Remaining, rl.Known = count(r), true
		}
		if t, ok := params["t"]; ok {
			rl.Reset = Seconds(t)
		}
		if r, ok := params["remaining"]; ok {
			rl.Remaining, rl.Known = count(r), true
		}
		if t, ok := params["reset"]; ok {
			rl.Reset = Seconds(t)
		}
	}
	if v := strings.TrimSpace(h.Get("Ratelimit-Remaining")); digits(v) {
		rl.Remaining, rl.Known = count(v), true
	}
	if v := strings.TrimSpace(h.Get("Ratelimit-Reset")); digits(v) {
		rl.Reset = Seconds(v)
	}
	if v := h.Get("Ratelimit-Policy"); v != "" {
		params := structured(v)
		if q, ok := params["q"]; ok {
			rl.Quota, rl.Known = count(q), true
		}
		if w, ok := params["w"]; ok {
			rl.Window = Seconds(w)
		}
	}
	return rl
}

// maxCount bounds a request count read from a header (a quota or what
// remains of it): larger numbers mean "plenty".
const maxCount = 1 << 30

// count reads a non-negative request count, at most maxCount.
func count(v string) int {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n > maxCount {
		return maxCount
	}
	return int(n)
}

// structured reads the non-negative integer parameters of the first item
// of a structured header (`"name";a=1;b=2` or `10;w=60`), and the members
// of the older dictionary form (`limit=100, remaining=50, reset=5`), as
// digit strings; anything else (a sign, a fraction, a token) is left out.
func structured(v string) map[string]string {
	out := map[string]string{}
	for i, member := range strings.Split(v, ",") {
		parts := strings.Split(member, ";")
		if i > 0 && len(parts) > 1 {
			continue // another policy's item
		}
		for _, part := range parts {
			k, val, ok := strings.Cut(strings.TrimSpace(part), "=")
			if !ok {
				continue
			}
			k = strings.ToLower(strings.TrimSpace(k))
			if _, seen := out[k]; seen {
				continue
			}
			if val = strings.Trim(strings.TrimSpace(val), `"`); digits(val) {
				out[k] = val
			}
		}
	}
	return out
}
