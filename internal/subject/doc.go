// Package subject names the entity an event is about beyond the envelope's
// own subject: what a provider's payload says (the Stripe customer a
// Stripe event concerns), and from that an event's ordering key — the
// entity whose events a FIFO topic keeps in order (billing.events groups a
// Stripe customer's events).
//
// StripeCustomer is the one derivation of "the Stripe customer of an
// event": ordering here, and erasure's subject identifiers, use it alike.
package subject
