package deliver

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/observe/trace"
)

// Permanent error codes (the errorCode of the dead letter).
const (
	// CodeRejected: the subscriber answered a 4xx other than 408, 425 and
	// 429 (for example 400, 401, 404, 410), or an unexpected status.
	CodeRejected = "subscriber_rejected"
	// CodeRedirected: the subscriber answered 3xx. Deliveries never follow
	// redirects (the signature and the URL's trust are for that URL only);
	// fix the configured URL and replay.
	CodeRedirected = "subscriber_redirected"
)

// Defaults of Deliverer.
const (
	DefaultTimeout = 10 * time.Second
	UserAgent      = "evp-consumer-http/1"
)

// Secrets supplies the active signing secrets, newest first. A
// *secret.Keyring implements it: cached, refreshed without a redeploy, the
// last good set kept when a refresh fails.
type Secrets interface {
	Active(ctx context.Context) []string
}

// Deliverer is the consumer Handler of an HTTP topic.
type Deliverer struct {
	// URL is the subscriber endpoint (see ValidateURL).
	URL string
	// Client sends the requests (default NewClient()).
	Client  *http.Client
	Secrets Secrets
	// Timeout bounds one request, connection to last body byte (default
	// 10 s).
	Timeout time.Duration
	Now     func() time.Time
	Log     *slog.Logger
}

var _ consume.Handler = (*Deliverer)(nil)

// NewClient is the HTTP client deliveries use: TLS 1.2+, no redirects
// followed, keep-alive connections reused across a batch.
func NewClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	return &http.Client{
		Transport:     t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// ValidateURL accepts an absolute https URL, or http to a loopback host
// (the local stack's sink, a test server). Events are signed, not
// encrypted: they never travel in clear text across a network.
func ValidateURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("subscriber URL %q is not an absolute URL", redact(raw))
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if host == "localhost" {
			return nil
		}
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
			return nil
		}
		return fmt.Errorf("subscriber URL %s must be https (http is only allowed to a loopback host)", redact(raw))
	}
	return fmt.Errorf("subscriber URL %s: scheme must be https", redact(raw))
}

// Handle delivers one event: the envelope JSON (payload inline) as the
// body, signed with every active secret. webhook-id is the event's storage
// key (WebhookID), stable across retries and unique across tenants, so
// subscribers deduplicate on it.
func (d *Deliverer) Handle(ctx context.Context, m consume.Message) error {
	secrets, err := d.secrets(ctx)
	if err != nil {
		return consume.Retry(fmt.Errorf("load signing secrets: %w", err))
	}
	body, err := m.Event.Marshal()
	if err != nil {
		return consume.Permanent(CodeRejected, fmt.Errorf("encode event: %w", err))
	}
	ts := d.now()
	id := WebhookID(m)
	sig, err := Sign(secrets, id, ts, body)
	if err != nil {
		return consume.Retry(err)
	}
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, d.URL, bytes.NewReader(body))
	if err != nil {
		return consume.Permanent(CodeRejected, fmt.Errorf("build request to %s: %w", redact(d.URL), err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set(HeaderID, id)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set(HeaderSignature, sig)
	// The producer's W3C context when it sent one; else the platform's
	// own trace, so a subscriber that speaks W3C trace context joins it.
	if tp := m.Event.Traceparent; tp != "" {
		req.Header.Set("traceparent", tp)
	} else if tp := trace.Traceparent(ctx); tp != "" {
		req.Header.Set("traceparent", tp)
	}
	client := d.Client
	if client == nil {
		client = defaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		terr := d.transportError(rctx, err, timeout)
		consume.NoteFailure(ctx, transportClass(rctx, err))
		return consume.Retry(terr)
	}
	defer func() {
		// Drain a little so the connection is reused; a huge body is cut.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}()
	answer := snippet(resp.Body)
	consume.NoteAnswer(ctx, resp.StatusCode, answer)
	return classify(resp, answer, d.now())
}

var defaultClient = NewClient()

// WebhookID is a delivery's webhook-id: the event's storage key
// (ledger.Key) — a provider's event id as the provider gave it (evt_…,
// unique by construction), an internal producer's id under its tenant
// ("acme/ord-1") — so two tenants publishing the same id are two
// deliveries a subscriber deduplicating on webhook-id keeps apart, and
// every retry and replay of one event carries the same one.
func WebhookID(m consume.Message) string {
	if m.Key != "" {
		return m.Key
	}
	return ledger.LegacyKey(m.Event.ID)
}

// classify maps a subscriber's answer (body: the start of it) to the
// runtime's retry intent.
func classify(resp *http.Response, body string, now time.Time) error {
	code := resp.StatusCode
	if code >= 200 && code < 300 {
		return nil
	}
	err := &AnswerError{Status: code, Body: body}
	switch {
	case code == http.StatusRequestTimeout, code == http.StatusTooEarly, code == http.StatusTooManyRequests, code >= 500:
		return consume.RetryAfter(err, retryAfter(resp.Header.Get("Retry-After"), now))
	case code >= 300 && code < 400:
		err.Location = redact(resp.Header.Get("Location"))
		return consume.Permanent(CodeRedirected, err)
	}
	return consume.Permanent(CodeRejected, err)
}

// retryAfter parses Retry-After: delay seconds or an HTTP date. Anything
// else (or a time in the past) is 0: the runtime's backoff.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(min(s, int64(12*time.Hour/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// transportError describes a failed request without the URL's query or
// credentials (url.Error would print them).
func (d *Deliverer) transportError(ctx context.Context, err error, timeout time.Duration) error {
	var ne net.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("POST %s: no answer within %s", redact(d.URL), timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("POST %s: %v", redact(d.URL), err)
}

// transportClass names a failed request for the attempt's record.
func transportClass(ctx context.Context, err error) string {
	var ne net.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	var te *tls.CertificateVerificationError
	var re tls.RecordHeaderError
	if errors.As(err, &te) || errors.As(err, &re) {
		return "tls"
	}
	var de *net.DNSError
	if errors.As(err, &de) {
		return "dns"
	}
	return "connection"
}

// redact keeps scheme, host and path: query strings and user info often
// carry tokens.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(invalid URL)"
	}
	return u.Scheme + "://" + u.Host + u.EscapedPath()
}

// secrets returns the active signing secrets.
func (d *Deliverer) secrets(ctx context.Context) ([]string, error) {
	if d.Secrets == nil {
		return nil, errors.New("no signing secrets configured")
	}
	s := d.Secrets.Active(ctx)
	if len(s) == 0 {
		return nil, errors.New("no active signing secret")
	}
	return s, nil
}

// CheckSecrets is a secret.Store filter: it fails a load holding a secret
// that is not a Standard Webhooks key, so a bad rotation keeps the last good
// secrets instead of signing with garbage.
func CheckSecrets(secrets []string) error {
	for i, sec := range secrets {
		if _, err := Key(sec); err != nil {
			return fmt.Errorf("active secret #%d: %w", i+1, err)
		}
	}
	return nil
}

func (d *Deliverer) now() time.Time {
	return clock.Or(d.Now)()
}

func (d *Deliverer) log() *slog.Logger {
	return logging.OrDiscard(d.Log)
}
