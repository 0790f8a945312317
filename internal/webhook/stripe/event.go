package stripe

import (
	"context"
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/webhook"
)

// TenantMetadataKey is the metadata key on data.object that names the
// tenant, for integrations that tag the Stripe objects they create.
const TenantMetadataKey = "tenant_id"

// ThinEventObject is the object of a Stripe thin event (API v2 event
// destinations): it names the event without its data, so the adapter
// refuses it with a message saying so.
const ThinEventObject = "v2.core.event"

// event is the part of a Stripe event the adapter reads. The body itself
// travels as the payload, untouched; data.object's members are kept raw so
// an unexpected shape deep inside an object never fails the decode.
type event struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Type    string `json:"type"`
	Created *int64 `json:"created"`
	// Account is set on Connect events: the connected account the event
	// happened on.
	Account string `json:"account"`
	Data    struct {
		Object struct {
			ID       json.RawMessage `json:"id"`
			Metadata json.RawMessage `json:"metadata"`
		} `json:"object"`
	} `json:"data"`
}

// Canonicalize maps a verified Stripe event to the platform envelope: id =
// the Stripe event id, type = "stripe." + the Stripe type, source =
// "stripe", timestamp = created, subject = data.object.id (the invoice,
// subscription, … the event is about), payload = the body bytes as
// received.
//
// Tenant resolution: a Connect event (one with an account) belongs to the
// tenant its account maps to in Tenants.Accounts, and to nobody else: the
// connected account controls its objects' metadata, so metadata never
// picks a tenant for it, and an unmapped account is a 422 unknown_account
// (Stripe keeps retrying while an operator adds the mapping). A platform
// event (no account) takes data.object.metadata.tenant_id, then
// Tenants.Default; none is a 422 tenant_unresolved.
func (p *Provider) Canonicalize(ctx context.Context, d webhook.Delivery) (envelope.Event, error) {
	if !utf8.Valid(d.Body) {
		// JSON is UTF-8; Stripe never sends anything else. Refused here,
		// with a 400, rather than handed to ingest.
		return envelope.Event{}, webhook.Invalid(webhook.CodeInvalidEvent, "the body is not valid UTF-8")
	}
	// The object is read first, on its own: a thin event's members have
	// other types (created is an RFC 3339 string), and the full decode
	// below would refuse it as "not a Stripe event" before saying why.
	var head struct {
		Object json.RawMessage `json:"object"`
	}
	if err := json.Unmarshal(d.Body, &head); err != nil {
		e := webhook.Invalid(webhook.CodeInvalidEvent, "the body is not a Stripe event JSON object")
		e.Cause = err
		return envelope.Event{}, e
	}
	var object string
	_ = json.Unmarshal(head.Object, &object) // not a string: the decode below says so
	switch {
	case object == ThinEventObject:
		return envelope.Event{}, webhook.Invalid(webhook.CodeInvalidEvent, "thin events are not supported (object %q): configure the endpoint for snapshot events (object \"event\")", object)
	case object != "" && object != "event":
		return envelope.Event{}, webhook.Invalid(webhook.CodeInvalidEvent, "object %q is not supported; configure the endpoint for snapshot events (object \"event\")", object)
	}
	var ev event
	if err := json.Unmarshal(d.Body, &ev); err != nil {
		e := webhook.Invalid(webhook.CodeInvalidEvent, "the body is not a Stripe event JSON object")
		e.Cause = err
		return envelope.Event{}, e
	}
	if ev.ID == "" || ev.Type == "" {
		return envelope.Event{}, webhook.Invalid(webhook.CodeInvalidEvent, "a Stripe event needs an id and a type")
	}
	if ev.Created == nil || *ev.Created <= 0 {
		e := webhook.Invalid(webhook.CodeInvalidEvent, "a Stripe event needs a created timestamp")
		e.EventID = ev.ID
		return envelope.Event{}, e
	}

	metaTenant := metadataTenant(ev.Data.Object.Metadata)
	var tenant string
	switch {
	case ev.Account != "":
		t, ok := p.Tenants.Account(ev.Account)
		if !ok {
			e := webhook.Unresolved(ev.ID, "connected account %q is not mapped to a tenant: add it to the tenant map (Stripe retries meanwhile); object metadata never picks the tenant of a Connect event", ev.Account)
			e.Code = webhook.CodeUnknownAccount
			return envelope.Event{}, e
		}
		tenant = t
		if metaTenant != "" && metaTenant != tenant {
			p.log().WarnContext(ctx, "stripe: a Connect event's object metadata names another tenant; ignored (the account mapping decides)",
				"eventId", ev.ID, "account", ev.Account, "tenantId", tenant, "metadataTenantId", metaTenant)
		}
	case metaTenant != "":
		tenant = metaTenant
	default:
		tenant = p.Tenants.Default
	}
	if tenant == "" {
		return envelope.Event{}, webhook.Unresolved(ev.ID, "event %s (%s) has no tenant: set data.object.metadata.%s or configure a default tenant", ev.ID, ev.Type, TenantMetadataKey)
	}

	out := envelope.Event{
		SchemaVersion: envelope.SchemaVersion,
		ID:            ev.ID,
		TenantID:      tenant,
		Type:          Source + "." + ev.Type,
		Source:        Source,
		Timestamp:     time.Unix(*ev.Created, 0).UTC(),
		Payload:       d.Body,
	}
	var subject string
	if json.Unmarshal(ev.Data.Object.ID, &subject) == nil {
		out.Subject = subject
	}
	return out, nil
}

// metadataTenant reads metadata.tenant_id when it is a string (Stripe
// metadata values always are; anything else is ignored, not fatal).
func metadataTenant(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var md map[string]json.RawMessage
	if json.Unmarshal(raw, &md) != nil {
		return ""
	}
	var t string
	if json.Unmarshal(md[TenantMetadataKey], &t) != nil {
		return ""
	}
	return t
}
