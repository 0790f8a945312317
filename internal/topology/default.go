package topology

import "time"

// Topic names of the default topology.
const (
	Billing       = "billing.events"
	Notifications = "notifications.events"
	CRM           = "crm.sync"
	CachePurge    = "cache.purge"
	Audit         = "audit.events"
	Integrations  = "integrations.events"
)

// Default is the reference mapping (docs/architecture.md §1): Stripe billing
// events, storefront inquiries fanned out to notifications and CRM, CMS
// content changes to the cache purge service, audit events archived in
// bulk, and the other webhook providers' events (GitHub, Shopify, Standard
// Webhooks senders) to one subscriber.
func Default() Topology {
	return Topology{
		Topics: []Topic{
			{
				// Money: small batches, quick turnaround, generous redrive.
				// FIFO: a subscriber sees one Stripe customer's events in
				// the order they were accepted (invoice.created before
				// invoice.paid, subscription updates in sequence); the
				// group is the tenant's customer (else the tenant), so a
				// customer whose events fail holds back only its own and
				// every other customer's keep flowing. No batch window:
				// SQS FIFO event sources take none.
				Name: Billing, Consumer: ConsumerHTTP, FIFO: true,
				BatchSize: 5, BatchWindow: 0, MaxConcurrency: 10,
				ConsumerTimeout:   30 * time.Second,
				VisibilityTimeout: EventSourceVisibility(30*time.Second, 0),
				MaxReceiveCount:   8, MaxOutboxAttempts: 5,
			},
			{
				Name: Notifications, Consumer: ConsumerHTTP,
				BatchSize: 10, BatchWindow: time.Second, MaxConcurrency: 10,
				ConsumerTimeout:   30 * time.Second,
				VisibilityTimeout: EventSourceVisibility(30*time.Second, time.Second),
				MaxReceiveCount:   5, MaxOutboxAttempts: 5,
			},
			{
				Name: CRM, Consumer: ConsumerHTTP,
				BatchSize: 10, BatchWindow: 2 * time.Second, MaxConcurrency: 5,
				ConsumerTimeout:   30 * time.Second,
				VisibilityTimeout: EventSourceVisibility(30*time.Second, 2*time.Second),
				MaxReceiveCount:   5, MaxOutboxAttempts: 5,
			},
			{
				// Spec 001: max_batch_size 10, max_batch_timeout 5 s, 3 tries.
				Name: CachePurge, Consumer: ConsumerPurge,
				BatchSize: 10, BatchWindow: 5 * time.Second, MaxConcurrency: 5,
				ConsumerTimeout:   60 * time.Second,
				VisibilityTimeout: EventSourceVisibility(60*time.Second, 5*time.Second),
				MaxReceiveCount:   3, MaxOutboxAttempts: 5,
			},
			{
				// The SaaS a tenant connects (webhook providers but Stripe):
				// one subscriber, as notifications.
				Name: Integrations, Consumer: ConsumerHTTP,
				BatchSize: 10, BatchWindow: time.Second, MaxConcurrency: 10,
				ConsumerTimeout:   30 * time.Second,
				VisibilityTimeout: EventSourceVisibility(30*time.Second, time.Second),
				MaxReceiveCount:   5, MaxOutboxAttempts: 5,
			},
			{
				// Bulk background archive: large batches, long window.
				Name: Audit, Consumer: ConsumerArchive,
				BatchSize: 100, BatchWindow: 30 * time.Second, MaxConcurrency: 2,
				ConsumerTimeout:   60 * time.Second,
				VisibilityTimeout: EventSourceVisibility(60*time.Second, 30*time.Second),
				MaxReceiveCount:   5, MaxOutboxAttempts: 5,
			},
		},
		Producers: []Producer{
			{Source: "stripe", Types: []string{"stripe.*"}, Provider: "stripe"},
			{Source: "github", Types: []string{"github.*"}, Provider: "github"},
			{Source: "shopify", Types: []string{"shopify.*"}, Provider: "shopify"},
			{Source: "standard", Types: []string{"standard.*"}, Provider: "standard"},
			{Source: "cms", Types: []string{"content.*"}},
			{Source: "storefront", Types: []string{"inquiry.*"}},
			{Source: "purge-api", Types: []string{"cache.purge.requested"}},
			{Source: "platform", Types: []string{"audit.*"}},
		},
		Routes: []Route{
			{Pattern: "stripe.invoice.*", Topics: []string{Billing}},
			{Pattern: "stripe.customer.subscription.*", Topics: []string{Billing}},
			{Pattern: "stripe.checkout.session.*", Topics: []string{Billing}},
			{Pattern: "inquiry.created", Topics: []string{Notifications, CRM}},
			{Pattern: "content.published", Topics: []string{CachePurge}},
			{Pattern: "content.deleted", Topics: []string{CachePurge}},
			{Pattern: "cache.purge.requested", Topics: []string{CachePurge}},
			{Pattern: "audit.*", Topics: []string{Audit}},
			{Pattern: "github.*", Topics: []string{Integrations}},
			{Pattern: "shopify.*", Topics: []string{Integrations}},
			{Pattern: "standard.*", Topics: []string{Integrations}},
		},
	}
}
