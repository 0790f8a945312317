package secret

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// Store loads a provider's active signing secrets: every secret a
// delivery may be signed with right now (providers roll secrets with an
// overlap window, so there can be several). In AWS it is a Secrets Manager
// secret; locally an environment variable.
type Store interface {
	Load(ctx context.Context) ([]string, error)
}

// Keyring defaults.
const (
	// DefaultRefresh is how old the cached secrets may get before a
	// delivery triggers a reload: a rotation takes effect within it without
	// a redeploy.
	DefaultRefresh = 5 * time.Minute
	// DefaultMinReload rate-limits reloads: after a failed refresh,
	// and for the reload a signature miss triggers (a secret rotated just
	// now), so a flood of forged deliveries cannot hammer the store.
	DefaultMinReload = 30 * time.Second
	// DefaultLoadTimeout bounds one load, well inside the webhook's
	// own deadline.
	DefaultLoadTimeout = 3 * time.Second
)

// KeyringOptions configure NewKeyring; zero values take the defaults.
type KeyringOptions struct {
	Refresh     time.Duration
	MinReload   time.Duration
	LoadTimeout time.Duration
	Now         func() time.Time
	Log         *slog.Logger
}

// WithDefaults fills unset fields.
func (o KeyringOptions) WithDefaults() KeyringOptions {
	if o.Refresh == 0 {
		o.Refresh = DefaultRefresh
	}
	if o.MinReload == 0 {
		o.MinReload = DefaultMinReload
	}
	if o.LoadTimeout == 0 {
		o.LoadTimeout = DefaultLoadTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// Validate checks the options: a refresh of 1m..1h (faster hammers the
// store, slower leaves a rotation unnoticed too long), a reload limit and
// load timeout of at least a second.
func (o KeyringOptions) Validate() error {
	var errs []error
	if o.Refresh < time.Minute || o.Refresh > time.Hour {
		errs = append(errs, fmt.Errorf("secret: refresh %s must be 1m..1h", o.Refresh))
	}
	if o.MinReload < time.Second {
		errs = append(errs, fmt.Errorf("secret: minimum reload interval %s must be at least 1s", o.MinReload))
	}
	if o.LoadTimeout < time.Second {
		errs = append(errs, fmt.Errorf("secret: load timeout %s must be at least 1s", o.LoadTimeout))
	}
	return errors.Join(errs...)
}

// Keyring caches a Store: loaded once at cold start (failing it if
// the store cannot be read), then reloaded lazily by the delivery that finds
// the cache older than Refresh. Lambda freezes an idle instance, so a
// background refresher would not run reliably; a lazy refresh costs one
// store read per Refresh per warm instance. A failed refresh keeps the last
// good secrets. Secrets are never logged. Safe for concurrent use.
type Keyring struct {
	store Store
	o     KeyringOptions

	mu       sync.Mutex
	secrets  []string
	loadedAt time.Time // last successful load
	tried    time.Time // last load attempt
}

// NewKeyring loads the store once and returns the cache.
func NewKeyring(ctx context.Context, store Store, o KeyringOptions) (*Keyring, error) {
	o = o.WithDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if store == nil {
		return nil, errors.New("secret: no store")
	}
	k := &Keyring{store: store, o: o}
	if _, err := k.load(ctx); err != nil {
		return nil, err
	}
	return k, nil
}

// Active returns the cached secrets, reloading them first if they are
// older than Refresh (and no reload was tried within MinReload). The
// returned slice is never modified; a reload replaces it.
func (k *Keyring) Active(ctx context.Context) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.o.Now()
	if now.Sub(k.loadedAt) >= k.o.Refresh && now.Sub(k.tried) >= k.o.MinReload {
		if _, err := k.loadLocked(ctx); err != nil {
			k.o.Log.WarnContext(ctx, "secret: refresh failed; keeping the cached secrets", "error", err, "cachedFor", now.Sub(k.loadedAt).Round(time.Second).String())
		}
	}
	return k.secrets
}

// Reload reloads the secrets now unless a load was tried within MinReload,
// and reports whether the active set changed. A verifier calls it after a
// signature matched none of the cached secrets: the provider may have
// rolled its secret moments ago.
func (k *Keyring) Reload(ctx context.Context) ([]string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.o.Now().Sub(k.tried) < k.o.MinReload {
		return k.secrets, false
	}
	changed, err := k.loadLocked(ctx)
	if err != nil {
		k.o.Log.WarnContext(ctx, "secret: reload failed; keeping the cached secrets", "error", err)
	}
	return k.secrets, changed
}

func (k *Keyring) load(ctx context.Context) (bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.loadLocked(ctx)
}

func (k *Keyring) loadLocked(ctx context.Context) (changed bool, err error) {
	k.tried = k.o.Now()
	ctx, cancel := context.WithTimeout(ctx, k.o.LoadTimeout)
	defer cancel()
	secrets, err := k.store.Load(ctx)
	if err != nil {
		return false, fmt.Errorf("secret: load: %w", err)
	}
	secrets = slices.DeleteFunc(slices.Clone(secrets), func(s string) bool { return s == "" })
	if len(secrets) == 0 {
		return false, errors.New("secret: load: the store holds no secret")
	}
	changed = !slices.Equal(secrets, k.secrets)
	k.secrets, k.loadedAt = secrets, k.o.Now()
	if changed {
		k.o.Log.InfoContext(ctx, "secret: secrets loaded", "count", len(secrets))
	}
	return changed, nil
}

// StoreFunc adapts a function to Store (for example to check
// what another store returns).
type StoreFunc func(ctx context.Context) ([]string, error)

// Load calls f.
func (f StoreFunc) Load(ctx context.Context) ([]string, error) { return f(ctx) }
