package ledger_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook/providers"
)

func TestKeys(t *testing.T) {
	t.Parallel()
	cms := topology.Producer{Source: "cms"}
	for _, d := range providers.All() {
		p := topology.Producer{Source: d.Name, Provider: d.Name}
		if d.Rules.GlobalIDs() {
			require.Equal(t, "evt_1", ledger.Key(p, "acme", "evt_1"), "%s: a provider's unique ids are global", d.Name)
		} else {
			require.Equal(t, "acme/evt_1", ledger.Key(p, "acme", "evt_1"), "%s: a provider's senders' ids are the tenant's", d.Name)
		}
	}
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
