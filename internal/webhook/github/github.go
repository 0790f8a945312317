// Package github is the GitHub webhook provider (POST /webhook/github): it
// verifies X-Hub-Signature-256 (sha256= and the hex HMAC-SHA256 of the raw
// body) against every active secret, acknowledges a hook's ping without an
// event, refuses form-encoded hooks, and canonicalizes an event into the
// platform envelope: id X-GitHub-Delivery (a redelivery keeps it), type
// github.<event>[.<action>], tenant from the GitHub App installation or
// the hook through the trusted tenant map.
//
// GitHub signs no timestamp, so a captured delivery replays until the
// ledger forgets its delivery id (the dedupe window, at least seven days;
// GitHub itself redelivers for three): docs/webhooks.md.
package github

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"mime"
	"strconv"
	"strings"
	"time"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/webhook"
)

// Source is GitHub's producer name; event types are "github." + the event
// (+ "." + its action).
const Source = "github"

// Headers GitHub sends with every delivery.
const (
	SignatureHeader = "X-Hub-Signature-256"
	EventHeader     = "X-GitHub-Event"
	DeliveryHeader  = "X-GitHub-Delivery"
	HookHeader      = "X-GitHub-Hook-ID"
)

// Tenant map keys: a GitHub App's installation and a repository or
// organization hook are numbered apart, so the map names which.
const (
	InstallationKey = "installation:"
	HookKey         = "hook:"
)

// Declaration is GitHub, as the platform knows it (webhook/providers).
var Declaration = webhook.Declaration{
	Name:         Source,
	Title:        "GitHub",
	Authz:        "GitHub cannot authenticate to API Gateway: every delivery is authenticated by the function, which verifies the X-Hub-Signature-256 HMAC of the raw body (constant-time, every active secret) before doing anything else. The stage is throttled.",
	Endpoint:     "GitHub App settings → Webhook URL, or a repository's or organization's Settings → Webhooks → Payload URL, content type application/json",
	Rules:        rules{},
	CheckSecrets: CheckSecrets,
	New: func(s webhook.Setup) (webhook.Provider, error) {
		return &Provider{Secrets: s.Secrets, Tenants: s.Tenants, Now: clock.Or(s.Now), Log: s.Log}, nil
	},
	Sign: func(d webhook.Signing) map[string]string {
		// The event's name travels in a header, its action in the body:
		// "issues.opened" is X-GitHub-Event: issues.
		event, _, _ := strings.Cut(d.Event, ".")
		return map[string]string{
			"Content-Type": "application/json", "User-Agent": "GitHub-Hookshot/evp",
			SignatureHeader: Sign(d.Body, d.Secret), EventHeader: event, DeliveryHeader: d.ID, HookHeader: d.Account,
		}
	},
	Secret: webhook.SecretText{
		Description: `active GitHub webhook secrets (the App's or the hooks' secret) as a JSON list, e.g. ["…"]. ` +
			"Set it after the first deploy; list two while a rotation is under way.",
		WhyNoRotation: "GitHub webhook secrets are set in the App's or the hook's settings on GitHub; Secrets Manager cannot rotate them. Operators add the new one here, change it on GitHub, then remove the old one (docs/webhooks.md) and the webhook re-reads the list every few minutes.",
	},
	// The samples come from installation 1, through hook 1.
	Local: webhook.Local{
		Secret:  "local-github-webhook-secret",
		Tenants: webhook.TenantMap{Accounts: map[string]string{InstallationKey + "1": "acme"}},
		Account: "1",
	},
}

// Sign is the X-Hub-Signature-256 value of body under secret.
func Sign(body []byte, secret string) string {
	return "sha256=" + hex.EncodeToString(mac(body, secret))
}

func mac(body []byte, secret string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return m.Sum(nil)
}

// CheckSecrets refuses an empty secret or one with surrounding spaces
// (pasted with the line break); GitHub takes any string. Errors never
// quote a secret.
func CheckSecrets(secrets []string) error {
	if len(secrets) == 0 {
		return errors.New("github: no webhook secret configured")
	}
	for i, s := range secrets {
		if s == "" || strings.TrimSpace(s) != s {
			return errors.New("github: webhook secret #" + strconv.Itoa(i+1) + " is empty or has surrounding spaces")
		}
	}
	return nil
}

// Provider is the GitHub webhook provider.
type Provider struct {
	Secrets webhook.Secrets
	// Tenants: "installation:<id>" for a GitHub App's installations,
	// "hook:<id>" for repository and organization hooks; Default takes
	// hook deliveries no key names (never an installation's).
	Tenants webhook.TenantMap
	Now     func() time.Time
	Log     *slog.Logger
}

var _ webhook.Provider = (*Provider)(nil)

// Name is "github".
func (p *Provider) Name() string { return Source }

// Verify checks X-Hub-Signature-256 against every active secret in
// constant time (GitHub signs with one secret; during a rotation both are
// active here while the hook is switched). The SHA-1 X-Hub-Signature is
// never accepted.
func (p *Provider) Verify(ctx context.Context, d webhook.Delivery) error {
	header := strings.TrimSpace(d.Header(SignatureHeader))
	if header == "" {
		if d.Header("X-Hub-Signature") != "" {
			return webhook.Unauthorized(webhook.CodeSignatureMissing, "the %s header is missing (the SHA-1 X-Hub-Signature is not accepted): give the hook a secret", SignatureHeader)
		}
		return webhook.Unauthorized(webhook.CodeSignatureMissing, "the %s header is missing: give the hook a secret", SignatureHeader)
	}
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	sig, err := hex.DecodeString(hexSig)
	if !ok || err != nil || len(sig) != sha256.Size {
		return webhook.Unauthorized(webhook.CodeSignatureMalformed, "the %s header is not sha256= and 64 hex digits", SignatureHeader)
	}
	if webhook.Verified(ctx, p.Secrets, func(secret string) bool { return hmac.Equal(sig, mac(d.Body, secret)) }) {
		return nil
	}
	return webhook.Unauthorized(webhook.CodeSignatureMismatch, "the signature matches no active webhook secret")
}

// event is the part of a GitHub event the adapter reads; the body travels
// as the payload, untouched.
type event struct {
	Action       json.RawMessage `json:"action"`
	Installation *struct {
		ID json.Number `json:"id"`
	} `json:"installation"`
	Repository *struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
	Organization *struct {
		Login string `json:"login"`
	} `json:"organization"`
	Zen string `json:"zen"`
}

// validEventName is an event's or an action's name, ^[a-z][a-z0-9_]*$
// written out over bytes (a package-level regexp is compiled by every
// cold start of every function that links the provider; syntax_test.go
// holds it to the regexp). The delivery's GUID is an envelope id
// (envelope.ValidID).
func validEventName(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z') && !('0' <= c && c <= '9') && c != '_' {
			return false
		}
	}
	return true
}

// Canonicalize maps a verified delivery to the platform envelope: id =
// X-GitHub-Delivery, type = "github." + X-GitHub-Event (+ "." + action),
// source "github", timestamp = the receipt (GitHub stamps no event time),
// subject = the repository's full name (else the organization's login),
// payload = the body bytes as received. A ping is acknowledged without an
// event.
//
// Tenant resolution: an event of a GitHub App installation belongs to the
// tenant "installation:<id>" maps to, and to nobody else (any organization
// may install a public App: an unmapped one is a 422 unknown_account, never
// the default); a hook's event (no installation) to "hook:<X-GitHub-Hook-ID>",
// else the default; none is a 422 tenant_unresolved.
func (p *Provider) Canonicalize(ctx context.Context, d webhook.Delivery) (envelope.Event, error) {
	if ct, _, _ := mime.ParseMediaType(d.Header("Content-Type")); ct == "application/x-www-form-urlencoded" {
		e := webhook.Invalid(webhook.CodeUnsupportedMediaType, "the hook sends application/x-www-form-urlencoded: set its content type to application/json")
		e.Status = 415
		return envelope.Event{}, e
	}
	name := strings.TrimSpace(d.Header(EventHeader))
	id := strings.TrimSpace(d.Header(DeliveryHeader))
	if !validEventName(name) {
		return envelope.Event{}, webhook.Invalid(webhook.CodeInvalidEvent, "the %s header must name the event (lowercase letters, digits and _)", EventHeader)
	}
	if !envelope.ValidID(id) {
		return envelope.Event{}, webhook.Invalid(webhook.CodeInvalidEvent, "the %s header must be the delivery's GUID", DeliveryHeader)
	}
	var ev event
	if e := webhook.ReadJSON(d.Body, &ev, "a GitHub event"); e != nil {
		e.EventID = id
		return envelope.Event{}, e
	}
	if name == "ping" {
		return envelope.Event{}, &webhook.Ack{Reason: "ping: the hook is set up (" + ev.Zen + ")"}
	}
	typ := Source + "." + name
	if len(ev.Action) > 0 && string(ev.Action) != "null" {
		var action string
		if json.Unmarshal(ev.Action, &action) != nil || !validEventName(action) {
			e := webhook.Invalid(webhook.CodeInvalidEvent, "the event's action must be lowercase letters, digits and _")
			e.EventID = id
			return envelope.Event{}, e
		}
		typ += "." + action
	}
	tenant, err := p.tenant(ctx, id, ev, d.Header(HookHeader))
	if err != nil {
		return envelope.Event{}, err
	}
	out := envelope.Event{
		SchemaVersion: envelope.SchemaVersion,
		ID:            id,
		TenantID:      tenant,
		Type:          typ,
		Source:        Source,
		Timestamp:     received(d, p.Now),
		Payload:       d.Body,
	}
	switch {
	case ev.Repository != nil && envelope.ValidSubject(ev.Repository.FullName):
		out.Subject = ev.Repository.FullName
	case ev.Organization != nil && envelope.ValidSubject(ev.Organization.Login):
		out.Subject = ev.Organization.Login
	}
	return out, nil
}

func (p *Provider) tenant(ctx context.Context, id string, ev event, hook string) (string, error) {
	if ev.Installation != nil && ev.Installation.ID != "" {
		key := InstallationKey + ev.Installation.ID.String()
		t, ok := p.Tenants.Account(key)
		if !ok {
			e := webhook.Unresolved(id, "GitHub App installation %s is not mapped to a tenant: add %q to the tenant map (GitHub shows the delivery as failed; redeliver it once mapped)", ev.Installation.ID, key)
			e.Code = webhook.CodeUnknownAccount
			return "", e
		}
		return t, nil
	}
	hook = strings.TrimSpace(hook)
	if t, ok := p.Tenants.Account(HookKey + hook); ok && hook != "" {
		return t, nil
	}
	if p.Tenants.Default != "" {
		logging.OrDiscard(p.Log).DebugContext(ctx, "github: hook delivery attributed to the default tenant", "hookId", hook)
		return p.Tenants.Default, nil
	}
	return "", webhook.Unresolved(id, "hook %q is not mapped to a tenant: add %q to the tenant map or configure a default tenant", hook, HookKey+hook)
}

// received is the delivery's receipt time (the clock's when the handler
// did not stamp it).
func received(d webhook.Delivery, now func() time.Time) time.Time {
	if !d.ReceivedAt.IsZero() {
		return d.ReceivedAt.UTC()
	}
	return clock.Or(now)().UTC()
}

// rules are GitHub's answers to the core: delivery GUIDs are unique, a
// redelivery resends the same body (content identity), the repository
// orders its events (the envelope subject) and the sender is the person
// an erasure finds them by.
type rules struct{ webhook.ContentRules }

var _ webhook.Rules = rules{}

// GlobalIDs: X-GitHub-Delivery is a GUID.
func (rules) GlobalIDs() bool { return true }

// Owner is the login of the event's sender (the person who pushed,
// opened, commented…): erasing a GitHub user finds the events they sent.
func (rules) Owner(payload []byte) string {
	var ev struct {
		Sender *struct {
			Login string `json:"login"`
		} `json:"sender"`
	}
	if json.Unmarshal(payload, &ev) != nil || ev.Sender == nil || !envelope.ValidSubject(ev.Sender.Login) {
		return ""
	}
	return ev.Sender.Login
}
