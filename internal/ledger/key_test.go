package ledger_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/topology"
)

func TestKeys(t *testing.T) {
	t.Parallel()
	stripe := topology.Producer{Source: "stripe", Provider: topology.ProviderStripe}
	cms := topology.Producer{Source: "cms"}
	require.Equal(t, "evt_1", ledger.Key(stripe, "acme", "evt_1"), "a provider's ids are global")
	require.Equal(t, "acme/evt_1", ledger.Key(cms, "acme", "evt_1"), "an internal producer's are the tenant's")
	require.Equal(t, ledger.ScopedKey("acme", "evt_1"), ledger.Key(cms, "acme", "evt_1"))
	for _, c := range []struct {
		key  string
		want bool
	}{
		{"evt_1", true}, {"acme/evt_1", true},
		{"globex/evt_1", false}, {"acme/evt_2", false}, {"evt_2", false}, {"acme", false}, {"", false},
	} {
		require.Equal(t, c.want, ledger.Names(c.key, "acme", "evt_1"), c.key)
	}
}
