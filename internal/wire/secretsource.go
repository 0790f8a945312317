package wire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/secret"
)

// SecretSource is where a function's active secrets (signing secrets,
// bearer keys) come from: a Secrets Manager secret holding a JSON list
// (deployed stages: ARNVar), or a comma-separated list in the environment
// (local development, where the stack passes its settings rather than
// creating secrets; Lambda environment variables are readable by anyone who
// may read the function's configuration). Exactly one is set.
type SecretSource struct {
	ARNVar, ListVar, RefreshVar string
	ARN                         string
	List                        []string
	// Keyring caches the secrets (Refresh from RefreshVar).
	Keyring secret.KeyringOptions
	// Check validates a loaded set (nil: any non-empty set); errors never
	// quote a secret.
	Check func([]string) error
}

// LoadSecretSource reads the source's variables and checks that exactly
// one of ARN and list is set, that a literal list passes check and that
// the refresh interval is one secret.Keyring accepts.
func LoadSecretSource(r *envconf.Reader, arnVar, listVar, refreshVar string, check func([]string) error) SecretSource {
	s := SecretSource{
		ARNVar: arnVar, ListVar: listVar, RefreshVar: refreshVar,
		ARN: r.String(arnVar, ""), List: r.List(listVar), Check: check,
		Keyring: secret.KeyringOptions{Refresh: r.Duration(refreshVar, 0)}.WithDefaults(),
	}
	if err := s.Keyring.Validate(); err != nil {
		r.Fail(FromVars(err, refreshVar))
	}
	switch {
	case s.ARN == "" && len(s.List) == 0:
		r.Fail(fmt.Errorf("%s (or, locally, %s) is required", arnVar, listVar))
	case s.ARN != "" && len(s.List) > 0:
		r.Fail(fmt.Errorf("set %s or %s, not both", arnVar, listVar))
	case len(s.List) > 0 && check != nil:
		if err := check(s.List); err != nil {
			r.Fail(fmt.Errorf("%s: %w", listVar, err))
		}
	}
	return s
}

// Store returns the store to load the secrets from: fromARN(ARN) when an
// ARN is set (the function's Secrets Manager adapter), the literal list
// otherwise; every load is checked.
func (s SecretSource) Store(fromARN func(arn string) secret.Store) (secret.Store, error) {
	var store secret.Store = secret.List(s.List)
	if s.ARN != "" {
		if fromARN == nil {
			return nil, errors.New(s.ARNVar + " is set but the function has no Secrets Manager client")
		}
		store = fromARN(s.ARN)
	} else if len(s.List) == 0 {
		return nil, fmt.Errorf("%s (or, locally, %s) is required", s.ARNVar, s.ListVar)
	}
	if s.Check == nil {
		return store, nil
	}
	return secret.StoreFunc(func(ctx context.Context) ([]string, error) {
		v, err := store.Load(ctx)
		if err != nil {
			return nil, err
		}
		return v, s.Check(v)
	}), nil
}

// OpenKeyring loads the secrets once (a cold start that cannot read them
// fails) and caches them, refreshed lazily every Keyring.Refresh; fromARN
// builds the Secrets Manager store (nil without a client).
func (s SecretSource) OpenKeyring(ctx context.Context, fromARN func(arn string) secret.Store, log *slog.Logger) (*secret.Keyring, error) {
	store, err := s.Store(fromARN)
	if err != nil {
		return nil, err
	}
	opts := s.Keyring
	opts.Log = log
	return secret.NewKeyring(ctx, store, opts)
}
