package ingestfn_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/ingestfn"
)

func env(mut func(m map[string]string)) *envconf.Reader {
	urls := map[string]string{}
	for _, n := range topology.Default().TopicNames() {
		urls[n] = "https://sqs.example/" + n
	}
	m := map[string]string{wire.EnvEventsTable: "events", wire.EnvBucket: "bucket", wire.EnvQueueURLs: testkit.MustJSON(urls)}
	if mut != nil {
		mut(m)
	}
	return envconf.FromMap(m)
}

func TestLoad(t *testing.T) {
	t.Parallel()
	cfg, err := ingestfn.Load(env(nil), topology.Default())
	require.NoError(t, err)
	require.Equal(t, 64<<10, cfg.ClaimCheckBytes)
	require.Equal(t, 1<<20, cfg.Ingest.Limits.MaxPayloadBytes)
	require.Equal(t, 14*24*time.Hour, cfg.Ingest.Retention)
	require.Equal(t, time.Minute, cfg.Ingest.Lease)
	require.Equal(t, 2*time.Minute, cfg.Ingest.RetryDelay)
	require.Equal(t, 10*time.Minute, cfg.Ingest.BatchDueAfter)
	require.Greater(t, cfg.Ingest.Lease, ingestfn.FunctionTimeout, "a live sender's lease outlasts the function")

	cfg, err = ingestfn.Load(env(func(m map[string]string) { m[ingestfn.EnvLegacyKeysUntil] = "2027-01-01T00:00:00Z" }), topology.Default())
	require.NoError(t, err)
	require.Equal(t, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), cfg.Ingest.LegacyKeysUntil)

	for name, tc := range map[string]struct {
		mut  func(m map[string]string)
		want string
	}{
		"no table":           {func(m map[string]string) { delete(m, wire.EnvEventsTable) }, wire.EnvEventsTable + " is required"},
		"no bucket":          {func(m map[string]string) { delete(m, wire.EnvBucket) }, wire.EnvBucket + " is required"},
		"missing topic":      {func(m map[string]string) { m[wire.EnvQueueURLs] = `{"billing.events":"u"}` }, `no queue URL for topic "crm.sync"`},
		"bad json":           {func(m map[string]string) { m[wire.EnvQueueURLs] = `{` }, "invalid JSON"},
		"short retention":    {func(m map[string]string) { m[wire.EnvRetention] = "24h" }, "ledger retention 24h0m0s must be at least"},
		"short lease":        {func(m map[string]string) { m[ingestfn.EnvDispatchLease] = "1s" }, "dispatch lease 1s must be at least 5s"},
		"huge payload limit": {func(m map[string]string) { m[ingestfn.EnvMaxPayloadBytes] = "10000000" }, "payload limit 10000000"},
		"huge claim check":   {func(m map[string]string) { m[wire.EnvClaimCheckBytes] = "1000000" }, wire.EnvClaimCheckBytes + ": claimcheck: threshold"},
		"bad duration":       {func(m map[string]string) { m[ingestfn.EnvRetryDelay] = "soon" }, ingestfn.EnvRetryDelay},
		"batch due early":    {func(m map[string]string) { m[ingestfn.EnvBatchDueAfter] = "30s" }, "a batch's due time 30s must be at least the dispatch lease 1m0s"},
		"bad legacy time":    {func(m map[string]string) { m[ingestfn.EnvLegacyKeysUntil] = "soon" }, "not an RFC 3339 time"},
	} {
		_, err := ingestfn.Load(env(tc.mut), topology.Default())
		require.ErrorContains(t, err, tc.want, name)
	}
	// A component's limit names the variables it was read from.
	_, err = ingestfn.Load(env(func(m map[string]string) { m[ingestfn.EnvDispatchLease] = "1s" }), topology.Default())
	require.ErrorContains(t, err, ingestfn.EnvDispatchLease)
}
