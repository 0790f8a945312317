package secret_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/secret"
)

func TestParseSources(t *testing.T) {
	t.Parallel()
	got, err := secret.ParseSources(` {"crm": ["whsec_new", " whsec_old "], "billing": ["whsec_b"]} `)
	require.NoError(t, err)
	require.Equal(t, []string{secret.Tag("billing", "whsec_b"), secret.Tag("crm", "whsec_new"), secret.Tag("crm", "whsec_old")}, got)
	src, s, ok := secret.Untag(got[0])
	require.True(t, ok)
	require.Equal(t, "billing", src)
	require.Equal(t, "whsec_b", s)
	for name, value := range map[string]string{
		"a list":            `["whsec_a"]`,
		"placeholder":       `q8XbXbLw3kbcW4hCmF0mJ0eDQ0Qx1Yc5`,
		"empty object":      `{}`,
		"a source, no list": `{"crm": []}`,
		"an empty secret":   `{"crm": ["whsec_a", " "]}`,
		"not strings":       `{"crm": [1]}`,
		"an empty source":   `{"": ["whsec_a"]}`,
		"a NUL":             `{"crm": ["whsec_\u0000x"]}`,
	} {
		_, err := secret.ParseSources(value)
		require.Error(t, err, name)
		require.NotContains(t, err.Error(), "whsec_a", "%s: errors never quote a secret", name)
	}
}

// rotating is a store whose value the test replaces, as an operator edits
// the secret.
type rotating struct {
	mu    sync.Mutex
	value string
}

func (r *rotating) Load(context.Context) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return secret.ParseSources(r.value)
}

func (r *rotating) set(v string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.value = v
}

// Each source reads its own secrets from the shared keyring, sees its own
// rotation, and never another source's.
func TestSourceViews(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	store := &rotating{value: `{"crm": ["whsec_crm"], "billing": ["whsec_billing"]}`}
	k, err := secret.NewKeyring(ctx, store, secret.KeyringOptions{Now: clock})
	require.NoError(t, err)
	crm, billing, nobody := secret.Source{Keys: k, Name: "crm"}, secret.Source{Keys: k, Name: "billing"}, secret.Source{Keys: k, Name: "nobody"}
	require.Equal(t, []string{"whsec_crm"}, crm.Active(ctx))
	require.Equal(t, []string{"whsec_billing"}, billing.Active(ctx))
	require.False(t, nobody.Has(ctx))
	require.True(t, crm.Has(ctx))

	advance := func() {
		mu.Lock()
		now = now.Add(secret.DefaultMinReload)
		mu.Unlock()
	}
	advance() // past the reload limit of the cold start's load
	store.set(`{"crm": ["whsec_crm2", "whsec_crm"], "billing": ["whsec_billing"]}`)
	got, changed := billing.Reload(ctx)
	require.False(t, changed, "billing's secrets did not change")
	require.Equal(t, []string{"whsec_billing"}, got)
	require.Equal(t, []string{"whsec_crm2", "whsec_crm"}, crm.Active(ctx), "the reload took crm's rotation")

	advance()
	store.set(`{"crm": ["whsec_crm3"], "billing": ["whsec_billing"]}`)
	got, changed = crm.Reload(ctx)
	require.True(t, changed)
	require.Equal(t, []string{"whsec_crm3"}, got)
}
