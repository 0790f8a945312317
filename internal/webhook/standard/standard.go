// Package standard is the Standard Webhooks provider
// (POST /webhook/standard/{source}): any sender that follows the spec
// (standardwebhooks.com), in its webhook-* headers or the svix-* spelling
// of Svix-based senders. Each source (a sender) has its own whsec_ signing
// secrets and its own tenant; a delivery is verified on its raw body
// (webhook-timestamp within ±5 minutes either way, any one v1 signature of
// webhook-signature matching an active secret of its source) and becomes
// an envelope with id webhook-id and type standard.<source>.<type>.
package standard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/kit/stdwebhook"
	"github.com/siteswarm/eventplatform/internal/webhook"
)

// Source is the producer name of Standard Webhooks events; their types are
// "standard." + the sending source + "." + the sender's type.
const Source = "standard"

// LocalSource is the source the local stack configures (its secret is
// STANDARD_WEBHOOK_SECRET).
const LocalSource = "local"

// Tolerance is how far webhook-timestamp may be from the clock, either
// way (the spec's five minutes).
const Tolerance = stdwebhook.DefaultTolerance

// Declaration is Standard Webhooks, as the platform knows it
// (webhook/providers).
var Declaration = webhook.Declaration{
	Name:         Source,
	Title:        "Standard Webhooks",
	Authz:        "Standard Webhooks senders cannot authenticate to API Gateway: every delivery is authenticated by the function, which verifies the webhook-signature HMAC of the id, timestamp and raw body with the source's secrets (constant-time, ±5 min) before doing anything else. The stage is throttled.",
	Endpoint:     "each sender's endpoint settings, with the source's name in place of {source}",
	Sources:      true,
	LocalSource:  LocalSource,
	Rules:        rules{},
	CheckSecrets: CheckSecrets,
	New: func(s webhook.Setup) (webhook.Provider, error) {
		if s.Tenants.Default != "" {
			return nil, errors.New("standard: every source names its own tenant (the tenant map's accounts); a default tenant is not used")
		}
		if s.Source == nil {
			return nil, errors.New("standard: the sources' secrets are required")
		}
		return &Provider{Sources: s.Source, Tenants: s.Tenants, Now: clock.Or(s.Now), Log: s.Log}, nil
	},
	Sign: func(d webhook.Signing) map[string]string {
		sig, err := stdwebhook.Header([]string{d.Secret}, d.ID, d.At, d.Body)
		if err != nil {
			sig = "" // a secret that is not whsec_: refused like an unsigned delivery
		}
		return map[string]string{
			"Content-Type": "application/json", stdwebhook.HeaderID: d.ID,
			stdwebhook.HeaderTimestamp: strconv.FormatInt(d.At.Unix(), 10), stdwebhook.HeaderSignature: sig,
		}
	},
	Secret: webhook.SecretText{
		Description: `active Standard Webhooks signing secrets by source, a JSON object of lists, e.g. {"crm": ["whsec_…"]}. ` +
			"Set it after the first deploy; list two for a source during its rotation.",
		WhyNoRotation: "each sender generates its source's whsec_ secret; Secrets Manager cannot rotate it. Operators list the new secret next to the old one for the source, then remove the old one (docs/webhooks.md) and the webhook re-reads the secret every few minutes.",
	},
	// whsec_ and base64("local-standard-webhooks-secret!").
	Local: webhook.Local{
		Secret:  "whsec_bG9jYWwtc3RhbmRhcmQtd2ViaG9va3Mtc2VjcmV0IQ==",
		Tenants: webhook.TenantMap{Accounts: map[string]string{LocalSource: "acme"}},
	},
}

// CheckSecrets refuses a secret that is not whsec_ and a base64 key of at
// least 16 bytes. Errors never quote a secret.
func CheckSecrets(secrets []string) error {
	if len(secrets) == 0 {
		return errors.New("standard: no signing secret configured")
	}
	for i, s := range secrets {
		if !strings.HasPrefix(s, stdwebhook.SecretPrefix) {
			return fmt.Errorf("standard: signing secret #%d does not start with %s", i+1, stdwebhook.SecretPrefix)
		}
		if _, err := stdwebhook.Key(s); err != nil {
			return fmt.Errorf("standard: signing secret #%d: %w", i+1, err)
		}
	}
	return nil
}

// Provider is the Standard Webhooks provider.
type Provider struct {
	// Sources are each source's active secrets (false: no such source).
	Sources func(source string) (webhook.Secrets, bool)
	// Tenants maps each source to its tenant (accounts only).
	Tenants webhook.TenantMap
	Now     func() time.Time
	Log     *slog.Logger
}

var _ webhook.Provider = (*Provider)(nil)

// Name is "standard".
func (p *Provider) Name() string { return Source }

// headers are a delivery's webhook-* headers, or the svix-* spelling.
func headers(d webhook.Delivery) (id, ts, sig string) {
	id, ts, sig = d.Header(stdwebhook.HeaderID), d.Header(stdwebhook.HeaderTimestamp), d.Header(stdwebhook.HeaderSignature)
	if id == "" && ts == "" && sig == "" {
		id, ts, sig = d.Header("svix-id"), d.Header("svix-timestamp"), d.Header("svix-signature")
	}
	return strings.TrimSpace(id), strings.TrimSpace(ts), strings.TrimSpace(sig)
}

// Verify authenticates a delivery as the spec says: its source is one the
// stage configures (else 404 unknown_source), webhook-timestamp is within
// Tolerance of the clock either way, and one v1 signature of
// webhook-signature is the HMAC-SHA256 of "<id>.<timestamp>.<body>" under
// an active secret of the source, compared in constant time (a miss
// reloads the secrets once, rate-limited).
func (p *Provider) Verify(ctx context.Context, d webhook.Delivery) error {
	secrets, ok := p.source(d.Source)
	if !ok {
		return &webhook.Error{Status: 404, Code: webhook.CodeUnknownSource,
			Message: fmt.Sprintf("no Standard Webhooks source %q is configured on this stage", d.Source)}
	}
	id, tsText, header := headers(d)
	if header == "" {
		return webhook.Unauthorized(webhook.CodeSignatureMissing, "the webhook-signature header is missing")
	}
	if id == "" || tsText == "" {
		return webhook.Unauthorized(webhook.CodeSignatureMalformed, "a signed delivery carries webhook-id and webhook-timestamp")
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return webhook.Unauthorized(webhook.CodeSignatureMalformed, "webhook-timestamp is not a unix timestamp")
	}
	if age := clock.Or(p.Now)().Sub(time.Unix(ts, 0)); age > Tolerance {
		return webhook.Unauthorized(webhook.CodeSignatureExpired, "the signature timestamp is %s old; the tolerance is %s", age.Round(time.Second), Tolerance)
	} else if -age > Tolerance {
		return webhook.Unauthorized(webhook.CodeSignatureExpired, "the signature timestamp is %s in the future; the tolerance is %s", (-age).Round(time.Second), Tolerance)
	}
	sigs, err := stdwebhook.Signatures(header)
	if err != nil {
		return webhook.Unauthorized(webhook.CodeSignatureMalformed, "webhook-signature is malformed: %v", err)
	}
	if len(sigs) == 0 {
		return webhook.Unauthorized(webhook.CodeSignatureMalformed, "webhook-signature has no v1 signature")
	}
	if webhook.Verified(ctx, secrets, func(secret string) bool {
		key, err := stdwebhook.Key(secret)
		return err == nil && stdwebhook.Matches(key, id, ts, d.Body, sigs)
	}) {
		return nil
	}
	return webhook.Unauthorized(webhook.CodeSignatureMismatch, "no signature matches an active secret of source %q", d.Source)
}

func (p *Provider) source(name string) (webhook.Secrets, bool) {
	if !webhook.ValidSourceName(name) || p.Sources == nil {
		return nil, false
	}
	return p.Sources(name)
}

// message is the part of a Standard Webhooks payload the adapter reads:
// the spec's {"type", "timestamp", "data"}.
type message struct {
	Type      *string `json:"type"`
	Timestamp string  `json:"timestamp"`
	Data      struct {
		ID json.RawMessage `json:"id"`
	} `json:"data"`
}

// validSenderType is the payload's type, dotted names,
// ^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z][A-Za-z0-9_-]*)*$ written out over
// bytes (a package-level regexp is compiled by every cold start of every
// function that links the provider; syntax_test.go holds it to the
// regexp). The webhook-id is an envelope id (envelope.ValidID).
func validSenderType(s string) bool {
	start := true
	for i := range len(s) {
		c := s[i]
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		switch {
		case start:
			if !letter {
				return false
			}
			start = false
		case c == '.':
			start = true
		case !letter && !('0' <= c && c <= '9') && c != '_' && c != '-':
			return false
		}
	}
	return !start
}

// Canonicalize maps a verified delivery to the platform envelope: id =
// webhook-id, type = "standard." + source + "." + the payload's type
// (lowercased, "-" as "_"), source "standard", timestamp = the payload's
// timestamp (else webhook-timestamp), subject = data.id, payload = the
// body bytes as received. The tenant is the source's, by the tenant map:
// an unmapped source is a 422 tenant_unresolved (the sender retries while
// an operator maps it).
func (p *Provider) Canonicalize(_ context.Context, d webhook.Delivery) (envelope.Event, error) {
	id, tsText, _ := headers(d)
	if !envelope.ValidID(id) {
		return envelope.Event{}, webhook.Invalid(webhook.CodeInvalidEvent, "webhook-id must be 1 to %d letters, digits and . _ : - starting with a letter or digit", envelope.MaxIDLen)
	}
	var m message
	if e := webhook.ReadJSON(d.Body, &m, "a Standard Webhooks message"); e != nil {
		e.EventID = id
		return envelope.Event{}, e
	}
	if m.Type == nil || !validSenderType(*m.Type) {
		e := webhook.Invalid(webhook.CodeInvalidEvent, "the payload's type must be dotted names of letters, digits, _ and - (the spec's \"type\")")
		e.EventID = id
		return envelope.Event{}, e
	}
	tenant, ok := p.Tenants.Account(d.Source)
	if !ok {
		return envelope.Event{}, webhook.Unresolved(id, "source %q has no tenant: add it to the tenant map (the sender retries meanwhile)", d.Source)
	}
	at, err := time.Parse(time.RFC3339Nano, m.Timestamp)
	if err != nil {
		ts, _ := strconv.ParseInt(tsText, 10, 64)
		at = time.Unix(ts, 0)
	}
	out := envelope.Event{
		SchemaVersion: envelope.SchemaVersion,
		ID:            id,
		TenantID:      tenant,
		Type:          Source + "." + d.Source + "." + strings.ReplaceAll(strings.ToLower(*m.Type), "-", "_"),
		Source:        Source,
		Timestamp:     at.UTC(),
		Payload:       d.Body,
	}
	var sub string
	if json.Unmarshal(m.Data.ID, &sub) == nil && envelope.ValidSubject(sub) {
		out.Subject = sub
	} else if n := string(m.Data.ID); len(n) > 0 && len(n) <= 20 && strings.Trim(n, "0123456789") == "" {
		out.Subject = n
	}
	return out, nil
}

// rules are Standard Webhooks' answers to the core: a webhook-id is unique
// only within its sender, so ids are scoped by tenant; a retry resends the
// same message (content identity); data.id orders the events.
type rules struct{ webhook.ContentRules }

var _ webhook.Rules = rules{}
