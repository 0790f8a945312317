package subject

import (
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// OrderingKey is the entity whose events a FIFO topic keeps in order, for
// an event published by producer p (its payload inline): for Stripe, the
// customer (a customer's invoices, subscriptions and checkouts are one
// sequence, whatever object each event is about); for everyone else the
// envelope's subject. "" when there is none: the tenant's events are then
// one sequence. Ingest stores it with the event, so the sweeper's resends
// (payload possibly claim-checked) and replays keep the event in its
// group.
func OrderingKey(p topology.Producer, ev envelope.Event) string {
	if p.Provider == topology.ProviderStripe {
		return StripeCustomer(ev.Payload)
	}
	return ev.Subject
}
