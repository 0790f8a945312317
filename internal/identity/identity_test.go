package identity_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/identity"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook/providers"
)

var (
	internal = topology.Producer{Source: "cms"}
	now      = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
)

func parse(t *testing.T, m map[string]any) envelope.Event {
	t.Helper()
	base := map[string]any{
		"id": "e1", "tenantId": "acme", "type": "content.published", "source": "cms",
		"timestamp": "2026-12-02T11:00:00Z", "payload": map[string]any{"k": "v"},
	}
	for k, v := range m {
		base[k] = v
	}
	b, err := json.Marshal(base)
	require.NoError(t, err)
	ev, rerr := envelope.Parse(b, now, envelope.DefaultLimits())
	require.Nil(t, rerr)
	return ev
}

func raw(t *testing.T, body string) envelope.Event {
	t.Helper()
	ev, rerr := envelope.Parse([]byte(`{"id":"e1","tenantId":"acme","type":"content.published","source":"cms","timestamp":"2026-12-02T11:00:00Z","payload":`+body+`}`), now, envelope.DefaultLimits())
	require.Nil(t, rerr)
	return ev
}

func TestContentIdentity(t *testing.T) {
	t.Parallel()
	base := identity.Of(internal, parse(t, nil))
	require.True(t, identity.Same(base, internal, parse(t, map[string]any{"timestamp": "2026-12-02T10:00:00Z"})), "the timestamp is not content: producers stamp retries")
	for name, m := range map[string]map[string]any{
		"payload": {"payload": map[string]any{"k": "w"}},
		"tenant":  {"tenantId": "other"},
		"type":    {"type": "content.deleted"},
		"subject": {"subject": "x"},
	} {
		require.False(t, identity.Same(base, internal, parse(t, m)), name)
	}
	// Same value, other text: key order, whitespace, escapes, number forms.
	a := identity.Of(internal, raw(t, `{"b":[1,2],"a":"é","n":1.50}`))
	for _, body := range []string{
		`{"a":"\u00e9","b":[1, 2],"n":1.5}`,
		`{ "n" : 15e-1 , "b" : [ 1 , 2 ] , "a" : "\u00E9" }`,
	} {
		require.True(t, identity.Same(a, internal, raw(t, body)), body)
	}
	require.False(t, identity.Same(a, internal, raw(t, `{"a":"é","b":[2,1],"n":1.5}`)), "array order is content")
}

// A provider's event is identified as its rules say: by the members that
// never change between its deliveries when it names a scheme (stored hash
// "<scheme>:…", compared the same way), by content otherwise.
func TestProvidersIdentifyTheirEvents(t *testing.T) {
	t.Parallel()
	schemes := 0
	for _, d := range providers.All() {
		p := topology.Producer{Source: d.Name, Provider: d.Name}
		files, err := filepath.Glob(filepath.Join("..", "..", "events", d.Name, "*.json"))
		require.NoError(t, err)
		require.NotEmpty(t, files, d.Name)
		for _, f := range files {
			payload, err := os.ReadFile(f)
			require.NoError(t, err)
			ev := envelope.Event{ID: "e1", TenantID: "acme", Source: d.Name, Type: d.Name + ".x", Payload: payload}
			stored := identity.Of(p, ev)
			require.True(t, identity.Same(stored, p, ev), f)
			if d.Rules.IdentityScheme() == "" {
				require.True(t, strings.HasPrefix(stored, "c2:"), "%s: identified by content", f)
				continue
			}
			schemes++
			want, ok := d.Rules.Identity(payload)
			require.True(t, ok, f)
			require.Equal(t, want, stored, f)
			require.True(t, strings.HasPrefix(stored, d.Rules.IdentityScheme()+":"), f)
			require.NotEqual(t, stored, identity.Of(internal, ev), "%s: an internal producer's event with the same body is identified by content", f)
			require.False(t, identity.Same(stored, p, envelope.Event{Source: d.Name, Payload: []byte(`{"id":"other"}`)}), "%s: another body under the id is a conflict", f)
		}
	}
	require.Positive(t, schemes, "some provider identifies its events by a scheme of its own")
}

// Hashes stored before schemes existed still compare the way they were
// made (compacted payload, key order significant).
func TestLegacyHashesStillCompare(t *testing.T) {
	t.Parallel()
	ev := raw(t, `{"a": 1, "b": 2}`)
	require.Len(t, identity.LegacyOf(ev), 64, "legacy hashes are bare hex")
	require.True(t, identity.Same(identity.LegacyOf(ev), internal, ev))
	require.False(t, identity.Same(identity.LegacyOf(ev), internal, raw(t, `{"b":2,"a":1}`)), "key order was significant then")
}
