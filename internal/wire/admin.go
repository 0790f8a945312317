package wire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/siteswarm/eventplatform/internal/admin"
	"github.com/siteswarm/eventplatform/internal/dynamo"
	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/queue"
	"github.com/siteswarm/eventplatform/internal/replay"
	"github.com/siteswarm/eventplatform/internal/secret"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// Environment variables of the admin-api function (the CDK app sets them;
// docs/local-development.md documents them). It also reads everything the
// replay function reads (tables, bucket, queue URLs: its replay route runs
// the same service in-process) and EnvDLQURLs (queue depths).
const (
	// EnvAdminKeySecretARN is the Secrets Manager secret holding a JSON list
	// of the active admin bearer keys, e.g. ["k-new…", "k-old…"] (deployed).
	EnvAdminKeySecretARN = "ADMIN_API_KEY_SECRET_ARN"
	// EnvAdminKey holds comma-separated keys directly: local development
	// only (Secrets Manager is not emulated; Lambda environment variables
	// are readable by anyone who may read the function's configuration).
	EnvAdminKey = "ADMIN_API_KEY"
	// EnvAdminKeyRefresh is how often the cached keys are re-read, e.g. "5m".
	EnvAdminKeyRefresh = "ADMIN_API_KEY_REFRESH"
)

// AdminFunctionTimeout is the admin-api's Lambda timeout, under API
// Gateway's 30 s integration limit.
const AdminFunctionTimeout = 25 * time.Second

// minAdminKeyLen rejects trivially guessable keys (the local default,
// "dev-admin-key", is 13).
const minAdminKeyLen = 12

// AdminConfig configures the admin-api function.
type AdminConfig struct {
	Replay  ReplayConfig
	DLQURLs map[string]string
	// KeySecretARN (deployed) or Keys (local): exactly one is set.
	KeySecretARN string
	Keys         []string
	KeyRefresh   time.Duration
}

// LoadAdminConfig reads and validates the admin-api config.
func LoadAdminConfig(r *envconf.Reader, top topology.Topology) (AdminConfig, error) {
	rc, rerr := LoadReplayConfig(r, top)
	c := AdminConfig{
		Replay:       rc,
		KeySecretARN: r.String(EnvAdminKeySecretARN, ""),
		Keys:         r.List(EnvAdminKey),
		KeyRefresh:   r.Duration(EnvAdminKeyRefresh, secret.DefaultRefresh),
	}
	r.JSON(EnvDLQURLs, &c.DLQURLs)
	if err := r.Err(); err != nil {
		return c, err
	}
	return c, errors.Join(rerr, c.validateKeys(top))
}

// Validate checks the config. Errors name variables, never key values.
func (c AdminConfig) Validate(top topology.Topology) error {
	return errors.Join(c.Replay.Validate(top), c.validateKeys(top))
}

func (c AdminConfig) validateKeys(top topology.Topology) error {
	var errs []error
	switch {
	case c.KeySecretARN == "" && len(c.Keys) == 0:
		errs = append(errs, fmt.Errorf("%s (or, locally, %s) is required", EnvAdminKeySecretARN, EnvAdminKey))
	case c.KeySecretARN != "" && len(c.Keys) > 0:
		errs = append(errs, fmt.Errorf("set %s or %s, not both", EnvAdminKeySecretARN, EnvAdminKey))
	}
	for i, k := range c.Keys {
		if len(k) < minAdminKeyLen {
			errs = append(errs, fmt.Errorf("%s: key #%d is shorter than %d characters", EnvAdminKey, i+1, minAdminKeyLen))
		}
	}
	for _, name := range top.TopicNames() {
		if c.DLQURLs[name] == "" {
			errs = append(errs, fmt.Errorf("%s has no DLQ URL for topic %q", EnvDLQURLs, name))
		}
	}
	if c.KeyRefresh < time.Minute || c.KeyRefresh > time.Hour {
		errs = append(errs, fmt.Errorf("%s must be 1m..1h", EnvAdminKeyRefresh))
	}
	return errors.Join(errs...)
}

var (
	_ admin.Operations = (*replay.Service)(nil)
	_ admin.Keys       = (*secret.Keyring)(nil)
)

// NewAdmin builds the admin API. It reads the keys once (failing the cold
// start if they cannot be read) and caches them, refreshed every
// KeyRefresh.
func NewAdmin(ctx context.Context, c AdminConfig, top topology.Topology, cl Clients, log *slog.Logger) (*admin.API, error) {
	var store secret.Store = secret.List(c.Keys)
	if c.KeySecretARN != "" {
		if cl.SecretsManager == nil {
			return nil, errors.New("admin-api: a Secrets Manager client is required for " + EnvAdminKeySecretARN)
		}
		store = &secret.Manager{Client: cl.SecretsManager, SecretID: c.KeySecretARN}
	}
	keys, err := secret.NewKeyring(ctx, store, secret.KeyringOptions{Refresh: c.KeyRefresh, Log: log})
	if err != nil {
		return nil, fmt.Errorf("admin-api: bearer keys: %w", err)
	}
	ops := NewReplay(c.Replay, top, cl, log)
	stats := &queue.Stats{Client: cl.SQS, URLs: c.Replay.QueueURLs, DLQURLs: c.DLQURLs}
	return &admin.API{
		Keys:       keys,
		Operations: ops,
		Incidents:  ops.Incidents,
		Queues:     stats,
		Checks: []admin.Check{
			{Name: "eventsTable", Probe: func(ctx context.Context) error { return dynamo.TableActive(ctx, cl.DynamoDB, c.Replay.EventsTable) }},
			{Name: "incidentsTable", Probe: func(ctx context.Context) error { return dynamo.TableActive(ctx, cl.DynamoDB, c.Replay.IncidentsTable) }},
			{Name: "queues", Probe: func(ctx context.Context) error { _, err := stats.Depths(ctx); return err }},
		},
		Topology: top,
		Now:      time.Now,
		Log:      log,
	}, nil
}
