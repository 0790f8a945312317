package topology_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/topology"
)

func TestDefaultIsValid(t *testing.T) {
	t.Parallel()
	require.NoError(t, topology.Default().Validate())
}

func TestMatch(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pattern, typ string
		want         bool
	}{
		{"inquiry.created", "inquiry.created", true},
		{"inquiry.created", "inquiry.created.v2", false},
		{"audit.*", "audit.login", true},
		{"audit.*", "audit.user.deleted", true},
		{"audit.*", "audit", false},
		{"audit.*", "auditx.login", false},
		{"stripe.*", "stripe.invoice.paid", true},
		{"stripe.invoice.*", "stripe.invoiceitem.created", false},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, topology.Match(tc.pattern, tc.typ), "%s ~ %s", tc.pattern, tc.typ)
	}
}

func TestDefaultRouting(t *testing.T) {
	t.Parallel()
	top := topology.Default()
	cases := map[string][]string{
		"stripe.invoice.paid":                  {topology.Billing},
		"stripe.customer.subscription.updated": {topology.Billing},
		"stripe.checkout.session.completed":    {topology.Billing},
		"stripe.customer.created":              nil,
		"inquiry.created":                      {topology.Notifications, topology.CRM},
		"content.published":                    {topology.CachePurge},
		"content.deleted":                      {topology.CachePurge},
		"content.drafted":                      nil,
		"cache.purge.requested":                {topology.CachePurge},
		"audit.user.login":                     {topology.Audit},
		"github.push":                          {topology.Integrations},
		"github.issues.opened":                 {topology.Integrations},
		"shopify.orders.create":                {topology.Integrations},
		"standard.local.contact.created":       {topology.Integrations},
	}
	for typ, want := range cases {
		require.Equal(t, want, top.Route(typ), typ)
	}
}

func TestDefaultProducers(t *testing.T) {
	t.Parallel()
	top := topology.Default()
	cases := []struct {
		source, typ string
		known, ok   bool
	}{
		{"stripe", "stripe.invoice.paid", true, true},
		{"stripe", "content.published", true, false},
		{"cms", "content.published", true, true},
		{"storefront", "inquiry.created", true, true},
		{"purge-api", "cache.purge.requested", true, true},
		{"purge-api", "content.published", true, false},
		{"platform", "audit.user.login", true, true},
		{"github", "github.push", true, true},
		{"github", "stripe.invoice.paid", true, false},
		{"shopify", "shopify.orders.create", true, true},
		{"standard", "standard.crm.contact.created", true, true},
		{"gitlab", "gitlab.push", false, false},
	}
	for _, tc := range cases {
		p, known := top.Producer(tc.source)
		require.Equal(t, tc.known, known, tc.source)
		require.Equal(t, tc.ok, known && p.Allows(tc.typ), "%s publishing %s", tc.source, tc.typ)
	}
}

func TestQueueNames(t *testing.T) {
	t.Parallel()
	tp := topology.Topic{Name: "billing.events"}
	require.Equal(t, "evp-prod-billing-events", tp.QueueName("evp-prod"))
	require.Equal(t, "evp-prod-billing-events-dlq", tp.DLQName("evp-prod"))
	tp.FIFO = true
	require.Equal(t, "evp-prod-billing-events.fifo", tp.QueueName("evp-prod"))
	require.Equal(t, "evp-prod-billing-events-dlq.fifo", tp.DLQName("evp-prod"))
}

func TestValidateRejects(t *testing.T) {
	t.Parallel()
	cases := map[string]func(top *topology.Topology){
		"unknown route topic":         func(top *topology.Topology) { top.Routes[0].Topics = []string{"nope"} },
		"duplicate topic":             func(top *topology.Topology) { top.Topics = append(top.Topics, top.Topics[0]) },
		"bad consumer":                func(top *topology.Topology) { top.Topics[0].Consumer = "FTP!" },
		"no consumer":                 func(top *topology.Topology) { top.Topics[0].Consumer = "" },
		"visibility too short":        func(top *topology.Topology) { top.Topics[0].VisibilityTimeout = time.Second },
		"fifo batch too big":          func(top *topology.Topology) { top.Topics[0].FIFO = true; top.Topics[0].BatchSize = 11 },
		"fifo batch window":           func(top *topology.Topology) { top.Topics[0].FIFO = true; top.Topics[0].BatchWindow = time.Second },
		"big batch no window":         func(top *topology.Topology) { top.Topics[0].BatchSize = 50; top.Topics[0].BatchWindow = 0 },
		"bad producer pattern":        func(top *topology.Topology) { top.Producers[0].Types = []string{"Stripe.*"} },
		"producer without types":      func(top *topology.Topology) { top.Producers[0].Types = nil },
		"zero receive count":          func(top *topology.Topology) { top.Topics[0].MaxReceiveCount = 0 },
		"provider under another name": func(top *topology.Topology) { top.Producers[0].Provider = "github" },
		"concurrency of one":          func(top *topology.Topology) { top.Topics[0].MaxConcurrency = 1 },
	}
	for name, mut := range cases {
		top := topology.Default().Clone()
		mut(&top)
		require.Error(t, top.Validate(), name)
	}
	require.NoError(t, topology.Default().Validate(), "Clone must not alias the default")
}

// A clone is equal to its topology in every field (the webhook provider
// included) and shares no slice with it.
func TestCloneIsDeepAndComplete(t *testing.T) {
	t.Parallel()
	orig := topology.Default()
	c := orig.Clone()
	require.Equal(t, orig, c)
	c.Producers[0].Types[0] = "changed.*"
	c.Routes[0].Topics[0] = "changed"
	c.Topics[0].Name = "changed"
	require.Equal(t, topology.Default(), orig, "the original is untouched")
}

// A FIFO queue's redrive sits above what a message can be received
// without being attempted (it waits in batches behind up to BatchSize-1
// failing ones of its group, each with MaxReceiveCount attempts), capped
// at SQS's 1,000; a standard queue's is MaxReceiveCount.
func TestRedriveMaxReceiveCount(t *testing.T) {
	t.Parallel()
	tp := topology.Topic{MaxReceiveCount: 8, BatchSize: 5}
	require.Equal(t, 8, tp.RedriveMaxReceiveCount())
	tp.FIFO = true
	require.Equal(t, 48, tp.RedriveMaxReceiveCount())
	require.Greater(t, tp.RedriveMaxReceiveCount(), (tp.BatchSize-1)*tp.MaxReceiveCount+tp.MaxReceiveCount-1, "a message's own last attempt comes before SQS would redrive it")
	tp.MaxReceiveCount, tp.BatchSize = 200, 10
	require.Equal(t, 1000, tp.RedriveMaxReceiveCount())
}

// Billing keeps each Stripe customer's events in order (a FIFO topic,
// grouped by the tenant's customer); every other default topic is a
// standard queue, a fair queue by tenant.
func TestBillingIsOrderedPerCustomer(t *testing.T) {
	t.Parallel()
	top := topology.Default()
	require.Equal(t, map[string]bool{topology.Billing: true}, top.FIFOTopics())
	billing, _ := top.Topic(topology.Billing)
	require.Zero(t, billing.BatchWindow, "FIFO event sources take no batch window")
	require.LessOrEqual(t, billing.BatchSize, 10)
	require.Equal(t, "evp-prod-billing-events.fifo", billing.QueueName("evp-prod"))
}
