package subject

import (
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/webhook/providers"
)

// Names are the subject identifiers an event names: its envelope subject
// (for a provider's event, the object it is about) and the entity the
// provider's payload says the event belongs to when that is another
// (webhook.Rules.Owner: the customer of an invoice). An erasure of either
// finds the event: erasing a customer finds that customer's invoices and
// subscriptions as well as the customer's own events.
type Names struct {
	Subject string
	Owner   string
}

// Normal drops an owner that is the subject itself (a customer.* event's
// object is the customer), so each identifier is indexed once.
func (n Names) Normal() Names {
	if n.Owner == n.Subject {
		n.Owner = ""
	}
	return n
}

// Has reports whether id is one of the names.
func (n Names) Has(id string) bool {
	return id != "" && (n.Subject == id || n.Owner == id)
}

// Of names the subjects of an event whose payload is inline: its envelope
// subject and, for a provider's event, the owner its rules read from the
// payload (an internal producer's event names its subject only).
func Of(ev envelope.Event) Names {
	n := Names{Subject: ev.Subject}
	if r := providers.Rules(ev.Source); r != nil && len(ev.Payload) > 0 {
		n.Owner = r.Owner(ev.Payload)
	}
	return n.Normal()
}

// ReadsPayload reports whether an event's subject identifiers come partly
// from its payload (a provider's owner): a reader holding it claim-checked
// loads it before asking Of.
func ReadsPayload(ev envelope.Event) bool { return providers.Rules(ev.Source) != nil }

// Query asks a store for a tenant's items naming a subject identifier
// (either of its Names), a page at a time.
type Query struct {
	TenantID string
	ID       string
	// Cursor continues a listing ("" the first page).
	Cursor string
	Limit  int
}

// OwnedBy reports whether some provider's rules read id as the owner of a
// provider's event as the provider sent it (an import file's record,
// before it became an envelope and its source is known).
func OwnedBy(payload []byte, id string) bool {
	if id == "" {
		return false
	}
	for _, d := range providers.All() {
		if d.Rules.Owner(payload) == id {
			return true
		}
	}
	return false
}
