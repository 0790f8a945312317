package wire_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
)

func ingestEnv(mut func(m map[string]string)) *envconf.Reader {
	urls := map[string]string{}
	for _, n := range topology.Default().TopicNames() {
		urls[n] = "https://sqs.example/" + n
	}
	b, _ := json.Marshal(urls)
	m := map[string]string{wire.EnvEventsTable: "events", wire.EnvBucket: "bucket", wire.EnvQueueURLs: string(b)}
	if mut != nil {
		mut(m)
	}
	return envconf.FromMap(m)
}

func TestLoadIngestConfig(t *testing.T) {
	t.Parallel()
	cfg, err := wire.LoadIngestConfig(ingestEnv(nil), topology.Default())
	require.NoError(t, err)
	require.Equal(t, 64<<10, cfg.ClaimCheckBytes)
	require.Equal(t, 1<<20, cfg.MaxPayloadBytes)
	require.Equal(t, 14*24*time.Hour, cfg.Retention)
	require.Equal(t, time.Minute, cfg.Lease)
	require.Equal(t, 2*time.Minute, cfg.RetryDelay)

	cases := map[string]struct {
		mut  func(m map[string]string)
		want string
	}{
		"no table":           {func(m map[string]string) { delete(m, wire.EnvEventsTable) }, wire.EnvEventsTable},
		"no bucket":          {func(m map[string]string) { delete(m, wire.EnvBucket) }, wire.EnvBucket},
		"missing topic":      {func(m map[string]string) { m[wire.EnvQueueURLs] = `{"billing.events":"u"}` }, "crm.sync"},
		"bad json":           {func(m map[string]string) { m[wire.EnvQueueURLs] = `{` }, "invalid JSON"},
		"short retention":    {func(m map[string]string) { m[wire.EnvRetention] = "24h" }, wire.EnvRetention},
		"short lease":        {func(m map[string]string) { m[wire.EnvDispatchLease] = "1s" }, wire.EnvDispatchLease},
		"huge payload limit": {func(m map[string]string) { m[wire.EnvMaxPayloadBytes] = "10000000" }, wire.EnvMaxPayloadBytes},
		"bad duration":       {func(m map[string]string) { m[wire.EnvRetryDelay] = "soon" }, wire.EnvRetryDelay},
	}
	for name, tc := range cases {
		_, err := wire.LoadIngestConfig(ingestEnv(tc.mut), topology.Default())
		require.ErrorContains(t, err, tc.want, name)
	}
}
