package subject

import (
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook/providers"
)

// OrderingKey is the entity whose events a FIFO topic keeps in order, for
// an event published by producer p (its payload inline): what its
// provider's rules say (webhook.Rules.OrderingKey: a customer whose
// invoices and subscriptions are one sequence, whatever object each event
// is about), for an internal producer the envelope's subject. "" when
// there is none: the tenant's events are then one sequence. Ingest stores
// it with the event, so the sweeper's resends (payload possibly
// claim-checked) and replays keep the event in its group.
func OrderingKey(p topology.Producer, ev envelope.Event) string {
	if r := providers.Rules(p.Provider); r != nil {
		return r.OrderingKey(ev)
	}
	return ev.Subject
}

// OrderingKeyOf is OrderingKey for an event whose producer is not at hand
// (a file import's record): a provider's events carry its name as their
// source (providers.Check), so its source finds its rules.
func OrderingKeyOf(ev envelope.Event) string {
	return OrderingKey(topology.Producer{Source: ev.Source, Provider: providerOf(ev)}, ev)
}

// providerOf is the provider whose event ev is ("" for an internal
// producer's).
func providerOf(ev envelope.Event) string {
	if providers.Rules(ev.Source) != nil {
		return ev.Source
	}
	return ""
}
