package subject

import (
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// Names are the subject identifiers an event names: its envelope subject
// (for a Stripe event the object's id) and the entity a provider's payload
// says the event belongs to when that is another (the Stripe customer of
// an invoice). An erasure of either finds the event: erasing a Stripe
// customer finds that customer's invoices, subscriptions and checkouts as
// well as the customer's own events.
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

// Of names the subjects of an event whose payload is inline: for a Stripe
// event its object's id and its customer, for every other producer its
// envelope subject (an internal producer's ordering key is its subject).
func Of(ev envelope.Event) Names {
	n := Names{Subject: ev.Subject}
	if ev.Source == topology.ProviderStripe && len(ev.Payload) > 0 {
		n.Owner = StripeCustomer(ev.Payload)
	}
	return n.Normal()
}

// Query asks a store for a tenant's items naming a subject identifier
// (either of its Names), a page at a time.
type Query struct {
	TenantID string
	ID       string
	// Cursor continues a listing ("" the first page).
	Cursor string
	Limit  int
}
