package jobkinds

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// The routed patterns become listings Stripe's filters take: each wildcard
// group alone in type, exact names 20 to a types listing; a group inside
// another and a name inside a group are left out (listed once); no
// patterns is one unfiltered listing.
func TestStripeListings(t *testing.T) {
	t.Parallel()
	var many []string
	for i := range 45 {
		many = append(many, fmt.Sprintf("charge.t%02d", i))
	}
	for _, c := range []struct {
		name     string
		patterns []string
		want     []StripeListParams
	}{
		{"every type", nil, []StripeListParams{{}}},
		{"the default routes", []string{"checkout.session.*", "customer.subscription.*", "invoice.*"},
			[]StripeListParams{{Type: "checkout.session.*"}, {Type: "customer.subscription.*"}, {Type: "invoice.*"}}},
		{"nested groups and covered names", []string{"customer.subscription.*", "customer.*", "customer.created", "invoice.paid", "charge.refunded"},
			[]StripeListParams{{Type: "customer.*"}, {Types: []string{"charge.refunded", "invoice.paid"}}}},
		{"more names than one call takes", many,
			[]StripeListParams{{Types: many[:20]}, {Types: many[20:40]}, {Types: many[40:]}}},
	} {
		require.Equal(t, c.want, stripeListings(c.patterns), c.name)
	}
}
