package subject_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/subject"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook/providers"
)

// samples are each provider's committed sample payloads (events/<name>/).
func samples(t *testing.T, provider string) [][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "events", provider, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "%s has samples", provider)
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		out = append(out, b)
	}
	return out
}

// A provider's event is ordered and named as its rules say, found by its
// producer (or, without one, by its source); an internal producer's
// event, whatever its payload looks like, by its subject alone.
func TestProvidersRulesDecide(t *testing.T) {
	t.Parallel()
	owners := 0
	for _, d := range providers.All() {
		producer := topology.Producer{Source: d.Name, Provider: d.Name}
		internal := topology.Producer{Source: "storefront"}
		for _, payload := range samples(t, d.Name) {
			ev := envelope.Event{Source: d.Name, Subject: "obj-1", Payload: payload}
			require.Equal(t, d.Rules.OrderingKey(ev), subject.OrderingKey(producer, ev), d.Name)
			require.Equal(t, d.Rules.OrderingKey(ev), subject.OrderingKeyOf(ev), d.Name)
			want := subject.Names{Subject: "obj-1", Owner: d.Rules.Owner(payload)}.Normal()
			require.Equal(t, want, subject.Of(ev), d.Name)
			require.True(t, subject.ReadsPayload(ev), d.Name)
			if want.Owner != "" {
				owners++
				require.True(t, subject.Of(ev).Has(want.Owner))
			}

			mine := envelope.Event{Source: internal.Source, Subject: "user-42", Payload: payload}
			require.Equal(t, "user-42", subject.OrderingKey(internal, mine), "an internal producer's subject")
			require.Equal(t, "user-42", subject.OrderingKeyOf(mine))
			require.Equal(t, subject.Names{Subject: "user-42"}, subject.Of(mine), "an internal producer names its subject only")
			require.False(t, subject.ReadsPayload(mine))

			claimChecked := envelope.Event{Source: d.Name, Subject: "obj-2"}
			require.Equal(t, subject.Names{Subject: "obj-2"}, subject.Of(claimChecked), "claim-checked (no bytes): the subject")
		}
	}
	require.Positive(t, owners, "some sample names an owner")
	require.Empty(t, subject.OrderingKey(topology.Producer{Source: "cms"}, envelope.Event{Payload: []byte(`{}`)}))
	require.Equal(t, subject.Names{}, subject.Of(envelope.Event{Source: "storefront"}))
}

func TestNames(t *testing.T) {
	t.Parallel()
	n := subject.Names{Subject: "in_1", Owner: "cus_A"}
	require.True(t, n.Has("cus_A"))
	require.True(t, n.Has("in_1"))
	require.False(t, n.Has(""))
	require.Equal(t, subject.Names{Subject: "cus_A"}, subject.Names{Subject: "cus_A", Owner: "cus_A"}.Normal(), "an owner that is the subject is named once")
}

// A provider's event as the provider sent it (an import record) is its
// owner's, whichever provider's rules read the owner.
func TestOwnedBy(t *testing.T) {
	t.Parallel()
	found := 0
	for _, d := range providers.All() {
		for _, payload := range samples(t, d.Name) {
			if o := d.Rules.Owner(payload); o != "" {
				found++
				require.True(t, subject.OwnedBy(payload, o), d.Name)
			}
			require.False(t, subject.OwnedBy(payload, "someone-else"), d.Name)
			require.False(t, subject.OwnedBy(payload, ""), d.Name)
		}
	}
	require.Positive(t, found)
}
