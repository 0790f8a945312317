package jobkinds_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/topology"
)

func TestStripeTypes(t *testing.T) {
	t.Parallel()
	withRoutes := func(patterns ...string) topology.Topology {
		top := topology.Default().Clone()
		top.Routes = nil
		for _, p := range patterns {
			top.Routes = append(top.Routes, topology.Route{Pattern: p, Topics: []string{topology.Billing}})
		}
		return top
	}
	noStripe := topology.Default().Clone()
	noStripe.Producers = nil
	for _, c := range []struct {
		name string
		top  topology.Topology
		max  int
		want []string
	}{
		{"the default topology's routes", topology.Default(), 20, []string{"checkout.session.*", "customer.subscription.*", "invoice.*"}},
		{"exact types, deduplicated and sorted", withRoutes("stripe.invoice.paid", "audit.*", "stripe.charge.refunded", "stripe.invoice.paid"), 20, []string{"charge.refunded", "invoice.paid"}},
		{"every Stripe event routed: no filter", withRoutes("stripe.invoice.paid", "stripe.*"), 20, nil},
		{"more than one call may carry: no filter", withRoutes("stripe.a", "stripe.b", "stripe.c"), 2, nil},
		{"no Stripe producer", noStripe, 20, nil},
	} {
		require.Equal(t, c.want, jobkinds.StripeTypes(c.top, c.max), c.name)
	}
}
