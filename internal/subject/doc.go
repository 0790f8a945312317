// Package subject names the entity an event is about beyond the envelope's
// own subject: what a provider's payload says (the owner its rules read,
// such as the customer an invoice belongs to), and from that an event's
// ordering key — the entity whose events a FIFO topic keeps in order.
// Both come from the provider's rules (webhook.Rules, asked through
// webhook/providers); an internal producer's event names its subject
// only, and its subject is its ordering key.
package subject
