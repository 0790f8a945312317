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

	"github.com/siteswarm/eventplatform/internal/purge"
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

var _ purge.API = (*Client)(nil)

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
func (c *Client) Purge(ctx context.Context, call purge.Call) (purge.Response, error) {
	tokens := c.Tokens.Active(ctx)
	if len(tokens) == 0 {
		return purge.Response{}, &purge.APIError{Status: http.StatusUnauthorized, Message: "no API token"}
	}
	body, err := json.Marshal(map[string][]string{"tags": call.Tags})
	if err != nil {
		return purge.Response{}, err
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
		return purge.Response{}, err
	}
	req.Header.Set("Authorization", "Bearer "+tokens[0])
	req.Header.Set("Content-Type", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = NewHTTPClient()
	}
	resp, err := hc.Do(req)
	if err != nil {
		return purge.Response{}, fmt.Errorf("purge API: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return purge.Response{}, fmt.Errorf("purge API: read answer: %w", err)
	}
	rl := RateLimitOf(resp.Header)
	var a answer
	jerr := json.Unmarshal(raw, &a)
	if resp.StatusCode >= 200 && resp.StatusCode < 300 && jerr == nil && a.Success {
		return purge.Response{RateLimit: rl}, nil
	}
	ae := &purge.APIError{Status: resp.StatusCode, RetryAfter: RetryAfter(resp.Header.Get("Retry-After"), time.Now()), RateLimit: rl}
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
	return purge.Response{}, ae
}

// RetryAfter reads a Retry-After header: delta seconds or an HTTP date; 0
// when absent or unreadable.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now).Round(time.Second)
	}
	return 0
}

// RateLimitOf reads the IETF rate-limit headers in either form Cloudflare
// sends: structured (Ratelimit: "default";r=50;t=30 and
// Ratelimit-Policy: "default";q=100;w=60) or split
// (RateLimit-Remaining, RateLimit-Reset, RateLimit-Limit).
func RateLimitOf(h http.Header) purge.RateLimit {
	var rl purge.RateLimit
	if v := h.Get("Ratelimit"); v != "" {
		params := structured(v)
		if r, ok := params["r"]; ok {
			rl.Remaining, rl.Known = r, true
		}
		if t, ok := params["t"]; ok {
			rl.Reset = time.Duration(t) * time.Second
		}
		if r, ok := params["remaining"]; ok {
			rl.Remaining, rl.Known = r, true
		}
		if t, ok := params["reset"]; ok {
			rl.Reset = time.Duration(t) * time.Second
		}
	}
	if v := h.Get("Ratelimit-Remaining"); v != "" {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			rl.Remaining, rl.Known = n, true
		}
	}
	if v := h.Get("Ratelimit-Reset"); v != "" {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			rl.Reset = time.Duration(n) * time.Second
		}
	}
	if v := h.Get("Ratelimit-Policy"); v != "" {
		params := structured(v)
		if q, ok := params["q"]; ok {
			rl.Quota, rl.Known = q, true
		}
		if w, ok := params["w"]; ok {
			rl.Window = time.Duration(w) * time.Second
		}
	}
	return rl
}

// structured reads the integer parameters of the first item of a
// structured header (`"name";a=1;b=2` or `10;w=60`).
func structured(v string) map[string]int {
	out := map[string]int{}
	first, _, _ := strings.Cut(v, ",")
	for _, part := range strings.Split(first, ";") {
		k, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(strings.Trim(val, `"`)); err == nil {
			out[strings.ToLower(strings.TrimSpace(k))] = n
		}
	}
	return out
}
