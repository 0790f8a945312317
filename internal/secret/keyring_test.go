package secret_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siteswarm/eventplatform/internal/secret"

	"github.com/stretchr/testify/require"
)

type memStore struct {
	mu      sync.Mutex
	secrets []string
	err     error
	loads   int
}

func (s *memStore) Load(context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loads++
	return append([]string(nil), s.secrets...), s.err
}

func (s *memStore) set(err error, secrets ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secrets, s.err = secrets, err
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestKeyringRefreshes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := &fakeClock{t: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	st := &memStore{secrets: []string{"whsec_a", ""}}
	k, err := secret.NewKeyring(ctx, st, secret.KeyringOptions{Refresh: 5 * time.Minute, MinReload: 30 * time.Second, Now: clk.Now})
	require.NoError(t, err)
	require.Equal(t, []string{"whsec_a"}, k.Active(ctx), "empty entries are dropped")

	st.set(nil, "whsec_b", "whsec_a")
	clk.Advance(4 * time.Minute)
	require.Equal(t, []string{"whsec_a"}, k.Active(ctx), "cached within the refresh interval")
	clk.Advance(time.Minute)
	require.Equal(t, []string{"whsec_b", "whsec_a"}, k.Active(ctx), "reloaded once stale")
	require.Equal(t, 2, st.loads)

	// A failing store keeps the last good secrets and is retried after
	// MinReload, not on every delivery.
	st.set(errors.New("secretsmanager: throttled"))
	clk.Advance(5 * time.Minute)
	require.Equal(t, []string{"whsec_b", "whsec_a"}, k.Active(ctx))
	require.Equal(t, []string{"whsec_b", "whsec_a"}, k.Active(ctx))
	require.Equal(t, 3, st.loads)
	clk.Advance(30 * time.Second)
	st.set(nil) // an emptied secret is an error too: keep the old
	require.Equal(t, []string{"whsec_b", "whsec_a"}, k.Active(ctx))
	require.Equal(t, 4, st.loads)
	clk.Advance(30 * time.Second)
	st.set(nil, "whsec_c")
	require.Equal(t, []string{"whsec_c"}, k.Active(ctx))

	// Reload: rate-limited, reports whether the set changed.
	secrets, changed := k.Reload(ctx)
	require.False(t, changed, "just loaded: rate-limited")
	require.Equal(t, []string{"whsec_c"}, secrets)
	clk.Advance(30 * time.Second)
	_, changed = k.Reload(ctx)
	require.False(t, changed, "same secrets")
	st.set(nil, "whsec_d")
	clk.Advance(30 * time.Second)
	secrets, changed = k.Reload(ctx)
	require.True(t, changed)
	require.Equal(t, []string{"whsec_d"}, secrets)
}

func TestKeyringFailsColdStart(t *testing.T) {
	t.Parallel()
	_, err := secret.NewKeyring(context.Background(), &memStore{err: errors.New("AccessDeniedException")}, secret.KeyringOptions{})
	require.ErrorContains(t, err, "AccessDeniedException")
	_, err = secret.NewKeyring(context.Background(), &memStore{secrets: []string{""}}, secret.KeyringOptions{})
	require.ErrorContains(t, err, "no secret")
}

func TestKeyringConcurrentUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := &fakeClock{t: time.Now()}
	st := &memStore{secrets: []string{"whsec_a"}}
	k, err := secret.NewKeyring(ctx, st, secret.KeyringOptions{Refresh: time.Minute, MinReload: time.Second, Now: clk.Now})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				if i == 0 && j%10 == 0 {
					clk.Advance(time.Minute)
					st.set(nil, fmt.Sprintf("whsec_%d", j))
				}
				s := k.Active(ctx)
				if len(s) != 1 || !strings.HasPrefix(s[0], "whsec_") {
					t.Errorf("bad secrets %v", s)
				}
				k.Reload(ctx)
			}
		})
	}
	wg.Wait()
}
