// Package shopify is the Shopify webhook provider (POST /webhook/shopify):
// it verifies X-Shopify-Hmac-Sha256 (the base64 HMAC-SHA256 of the raw
// body under the app's client secret) against every active secret —
// a bad HMAC is a 401, as Shopify's mandatory compliance topics require —
// and canonicalizes a delivery into the platform envelope: id
// X-Shopify-Webhook-Id, type shopify.<topic with / as .>, tenant from
// X-Shopify-Shop-Domain through the trusted tenant map, timestamp
// X-Shopify-Triggered-At (a retry carries the original trigger time and
// payload, for up to four hours of retries).
package shopify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/webhook"
)

// Source is Shopify's producer name; event types are "shopify." + the
// topic with its "/" as "." ("shopify.orders.create").
const Source = "shopify"

// Headers Shopify sends with every delivery.
const (
	SignatureHeader   = "X-Shopify-Hmac-Sha256"
	TopicHeader       = "X-Shopify-Topic"
	ShopHeader        = "X-Shopify-Shop-Domain"
	WebhookIDHeader   = "X-Shopify-Webhook-Id"
	TriggeredAtHeader = "X-Shopify-Triggered-At"
	EventIDHeader     = "X-Shopify-Event-Id"
	APIVersionHeader  = "X-Shopify-API-Version"
)

// Declaration is Shopify, as the platform knows it (webhook/providers).
var Declaration = webhook.Declaration{
	Name:         Source,
	Title:        "Shopify",
	Authz:        "Shopify cannot authenticate to API Gateway: every delivery is authenticated by the function, which verifies the X-Shopify-Hmac-Sha256 HMAC of the raw body (constant-time, every active secret) before doing anything else. The stage is throttled.",
	Endpoint:     "the app's webhook subscriptions (shopify.app.toml or the Admin API's webhookSubscriptionCreate)",
	Rules:        rules{},
	CheckSecrets: CheckSecrets,
	New: func(s webhook.Setup) (webhook.Provider, error) {
		if s.Tenants.Default != "" {
			return nil, errors.New("shopify: a default tenant would take the events of any shop that installs the app; map each shop domain instead")
		}
		return &Provider{Secrets: s.Secrets, Tenants: s.Tenants, Now: clock.Or(s.Now), Log: s.Log}, nil
	},
	Sign: func(d webhook.Signing) map[string]string {
		return map[string]string{
			"Content-Type": "application/json", SignatureHeader: Sign(d.Body, d.Secret),
			TopicHeader: strings.ReplaceAll(d.Event, ".", "/"), ShopHeader: d.Account, WebhookIDHeader: d.ID,
			TriggeredAtHeader: d.At.UTC().Format(time.RFC3339Nano), APIVersionHeader: "2026-10",
		}
	},
	Secret: webhook.SecretText{
		Description: `active Shopify app client secrets as a JSON list, e.g. ["…"]. ` +
			"Set it after the first deploy; list two while the app's secret is being rotated.",
		WhyNoRotation: "Shopify issues the app's client secret in the Partner Dashboard; Secrets Manager cannot rotate it. Operators list the new secret here before rotating it there, then remove the old one (docs/webhooks.md) and the webhook re-reads the list every few minutes.",
	},
	Local: webhook.Local{
		Secret:  "local-shopify-client-secret",
		Tenants: webhook.TenantMap{Accounts: map[string]string{"acme.myshopify.com": "acme"}},
		Account: "acme.myshopify.com",
	},
}

// Sign is the X-Shopify-Hmac-Sha256 value of body under secret.
func Sign(body []byte, secret string) string {
	return base64.StdEncoding.EncodeToString(mac(body, secret))
}

func mac(body []byte, secret string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return m.Sum(nil)
}

// CheckSecrets refuses an empty secret or one with surrounding spaces (the
// app's client secret, pasted with its line break). Errors never quote a
// secret.
func CheckSecrets(secrets []string) error {
	if len(secrets) == 0 {
		return errors.New("shopify: no client secret configured")
	}
	for i, s := range secrets {
		if s == "" || strings.TrimSpace(s) != s {
			return errors.New("shopify: client secret #" + strconv.Itoa(i+1) + " is empty or has surrounding spaces")
		}
	}
	return nil
}

// Provider is the Shopify webhook provider.
type Provider struct {
	Secrets webhook.Secrets
	// Tenants maps shop domains ("acme.myshopify.com") to tenants; there
	// is no default: every shop is mapped.
	Tenants webhook.TenantMap
	Now     func() time.Time
	Log     *slog.Logger
}

var _ webhook.Provider = (*Provider)(nil)

// Name is "shopify".
func (p *Provider) Name() string { return Source }

// Verify checks X-Shopify-Hmac-Sha256 against every active secret in
// constant time (during a client secret rotation both are active here).
// Every failure is a 401: Shopify's compliance topics require it.
func (p *Provider) Verify(ctx context.Context, d webhook.Delivery) error {
	header := strings.TrimSpace(d.Header(SignatureHeader))
	if header == "" {
		return webhook.Unauthorized(webhook.CodeSignatureMissing, "the %s header is missing", SignatureHeader)
	}
	sig, err := base64.StdEncoding.DecodeString(header)
	if err != nil || len(sig) != sha256.Size {
		return webhook.Unauthorized(webhook.CodeSignatureMalformed, "the %s header is not a base64 HMAC-SHA256", SignatureHeader)
	}
	if webhook.Verified(ctx, p.Secrets, func(secret string) bool { return hmac.Equal(sig, mac(d.Body, secret)) }) {
		return nil
	}
	return webhook.Unauthorized(webhook.CodeSignatureMismatch, "the HMAC matches no active client secret")
}

// The headers' syntax, each the regular expression its comment quotes
// written out over bytes (a package-level regexp is compiled by every cold
// start of every function that links the provider; syntax_test.go holds
// each to its regexp). The webhook id is an envelope id (envelope.ValidID).

// validTopic is a topic such as orders/create,
// ^[a-z][a-z0-9_]*(/[a-z][a-z0-9_]*)+$.
func validTopic(s string) bool {
	start, slashes := true, 0
	for i := range len(s) {
		switch c := s[i]; {
		case start:
			if c < 'a' || c > 'z' {
				return false
			}
			start = false
		case c == '/':
			start = true
			slashes++
		case !('a' <= c && c <= 'z') && !('0' <= c && c <= '9') && c != '_':
			return false
		}
	}
	return !start && slashes > 0
}

// validShopDomain is a shop's domain, ^[a-z0-9][a-z0-9-]*\.myshopify\.com$.
func validShopDomain(s string) bool {
	shop, ok := strings.CutSuffix(s, ".myshopify.com")
	if !ok || shop == "" || shop[0] == '-' {
		return false
	}
	for i := range len(shop) {
		if c := shop[i]; !('a' <= c && c <= 'z') && !('0' <= c && c <= '9') && c != '-' {
			return false
		}
	}
	return true
}

// Canonicalize maps a verified delivery to the platform envelope: id =
// X-Shopify-Webhook-Id, type = "shopify." + X-Shopify-Topic with "/" as
// ".", source "shopify", timestamp = X-Shopify-Triggered-At (else the
// receipt), subject = the resource's admin GraphQL id (else its id),
// payload = the body bytes as received. The shop domain is the tenant, by
// the tenant map only: an unmapped shop is a 422 unknown_account (Shopify
// retries while an operator maps it).
func (p *Provider) Canonicalize(_ context.Context, d webhook.Delivery) (envelope.Event, error) {
	id := strings.TrimSpace(d.Header(WebhookIDHeader))
	if !envelope.ValidID(id) {
		return envelope.Event{}, webhook.Invalid(webhook.CodeInvalidEvent, "the %s header must be the webhook's id", WebhookIDHeader)
	}
	topic := strings.TrimSpace(d.Header(TopicHeader))
	if !validTopic(topic) {
		e := webhook.Invalid(webhook.CodeInvalidEvent, "the %s header must be a topic such as orders/create", TopicHeader)
		e.EventID = id
		return envelope.Event{}, e
	}
	var res resource
	if e := webhook.ReadJSON(d.Body, &res, "a Shopify webhook"); e != nil {
		e.EventID = id
		return envelope.Event{}, e
	}
	shop := strings.ToLower(strings.TrimSpace(d.Header(ShopHeader)))
	if !validShopDomain(shop) {
		e := webhook.Invalid(webhook.CodeInvalidEvent, "the %s header must be the shop's myshopify.com domain", ShopHeader)
		e.EventID = id
		return envelope.Event{}, e
	}
	tenant, ok := p.Tenants.Account(shop)
	if !ok {
		e := webhook.Unresolved(id, "shop %q is not mapped to a tenant: add it to the tenant map (Shopify retries meanwhile)", shop)
		e.Code = webhook.CodeUnknownAccount
		return envelope.Event{}, e
	}
	at := d.ReceivedAt
	if t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(d.Header(TriggeredAtHeader))); err == nil {
		at = t
	} else if at.IsZero() {
		at = clock.Or(p.Now)()
	}
	return envelope.Event{
		SchemaVersion: envelope.SchemaVersion,
		ID:            id,
		TenantID:      tenant,
		Type:          Source + "." + strings.ReplaceAll(topic, "/", "."),
		Source:        Source,
		Timestamp:     at.UTC(),
		Subject:       res.subject(),
		Payload:       d.Body,
	}, nil
}

// resource is the part of a webhook's payload (the resource itself: an
// order, a customer, a product…) the adapter and the rules read.
type resource struct {
	ID         json.RawMessage `json:"id"`
	GraphQLID  string          `json:"admin_graphql_api_id"`
	Customer   *customerRef    `json:"customer"`
	CustomerID json.RawMessage `json:"customer_id"`
}

type customerRef struct {
	ID        json.RawMessage `json:"id"`
	GraphQLID string          `json:"admin_graphql_api_id"`
}

// subject is the resource's admin GraphQL id ("gid://shopify/Order/…"),
// else its numeric id; "" when neither is usable.
func (r resource) subject() string {
	if envelope.ValidSubject(r.GraphQLID) {
		return r.GraphQLID
	}
	if n := number(r.ID); n != "" {
		return n
	}
	return ""
}

// number is a JSON integer (or a string of digits) as its digits.
func number(raw json.RawMessage) string {
	s := strings.Trim(string(raw), `"`)
	if s == "" || len(s) > 20 {
		return ""
	}
	if _, err := strconv.ParseUint(s, 10, 64); err != nil {
		return ""
	}
	return s
}

// customerGID is Shopify's admin GraphQL id of a customer.
func customerGID(id string) string { return "gid://shopify/Customer/" + id }

// rules are Shopify's answers to the core: webhook ids are unique, a retry
// resends the original payload (content identity), and the customer a
// resource belongs to is its owner and its FIFO group.
type rules struct{ webhook.ContentRules }

var _ webhook.Rules = rules{}

// GlobalIDs: X-Shopify-Webhook-Id is unique across shops.
func (rules) GlobalIDs() bool { return true }

// Owner is the customer the resource belongs to, as its admin GraphQL id:
// an order's or a draft's customer, the customer of a compliance request
// (customers/data_request, customers/redact), a customer resource itself.
// Erasing gid://shopify/Customer/<id> finds that customer's orders as
// well as its own events.
func (rules) Owner(payload []byte) string {
	var r resource
	if json.Unmarshal(payload, &r) != nil {
		return ""
	}
	if strings.HasPrefix(r.GraphQLID, "gid://shopify/Customer/") && envelope.ValidSubject(r.GraphQLID) {
		return r.GraphQLID
	}
	if c := r.Customer; c != nil {
		if strings.HasPrefix(c.GraphQLID, "gid://shopify/Customer/") && envelope.ValidSubject(c.GraphQLID) {
			return c.GraphQLID
		}
		if n := number(c.ID); n != "" {
			return customerGID(n)
		}
	}
	if n := number(r.CustomerID); n != "" {
		return customerGID(n)
	}
	return ""
}

// OrderingKey is the owner (a customer's orders are one sequence), else
// the resource.
func (r rules) OrderingKey(ev envelope.Event) string {
	if o := r.Owner(ev.Payload); o != "" {
		return o
	}
	return ev.Subject
}
