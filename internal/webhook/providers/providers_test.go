package providers_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook/providers"
)

// Every declaration is complete, named once, and has samples to send.
func TestDeclarationsAreCompleteAndUnique(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, d := range providers.All() {
		require.NoError(t, d.Validate())
		require.False(t, seen[d.Name], "%s declared twice", d.Name)
		seen[d.Name] = true
		got, ok := providers.Of(d.Name)
		require.True(t, ok)
		require.Equal(t, d.Name, got.Name)
		require.NotNil(t, providers.Rules(d.Name))
		files, err := filepath.Glob(filepath.Join("..", "..", "..", "events", d.Name, "*.json"))
		require.NoError(t, err)
		require.NotEmpty(t, files, "%s has samples under events/%s (evp %s send)", d.Name, d.Name, d.Name)
	}
	require.Nil(t, providers.Rules(""), "an internal producer has no provider rules")
	require.Nil(t, providers.Rules("nobody"))
	_, err := os.Stat(filepath.Join("..", "..", "..", "events"))
	require.NoError(t, err)
}

// The default topology's producers are every provider's, under its name,
// and the check refuses what would confuse an event's source with a
// provider.
func TestCheck(t *testing.T) {
	t.Parallel()
	top := topology.Default()
	require.NoError(t, providers.Check(top))
	for _, d := range providers.All() {
		p, ok := top.Producer(d.Name)
		require.True(t, ok, "the default topology has %s's producer", d.Name)
		require.Equal(t, d.Name, p.Provider)
		require.True(t, p.Allows(d.TypePrefix()+"x.y"), "%s publishes its own types", d.Name)
	}
	for name, mut := range map[string]func(*topology.Topology){
		"unknown provider": func(t *topology.Topology) {
			t.Producers = append(t.Producers, topology.Producer{Source: "gitlab", Types: []string{"gitlab.*"}, Provider: "gitlab"})
		},
		"an internal producer named after a provider": func(t *topology.Topology) {
			for i := range t.Producers {
				if t.Producers[i].Source == "github" {
					t.Producers[i].Provider = ""
				}
			}
		},
	} {
		c := top.Clone()
		mut(&c)
		require.Error(t, providers.Check(c), name)
	}
}
