package wire_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
)

func recoveryEnv(top topology.Topology, extra map[string]string) map[string]string {
	urls, arns := map[string]string{}, map[string]string{}
	for _, n := range top.TopicNames() {
		urls[n] = "https://sqs/" + n
		arns[n] = "arn:aws:sqs:us-east-1:1:" + n + "-dlq"
	}
	m := map[string]string{
		wire.EnvEventsTable: "events", wire.EnvIncidentsTable: "incidents", wire.EnvBucket: "archive",
		wire.EnvQueueURLs: mustJSONString(urls), wire.EnvDLQARNs: mustJSONString(arns),
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func mustJSONString(m map[string]string) string {
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestRecoveryConfigs(t *testing.T) {
	t.Parallel()
	top := topology.Default()

	s, err := wire.LoadSweeperConfig(envconf.FromMap(recoveryEnv(top, nil)), top)
	require.NoError(t, err)
	require.Equal(t, 50, s.BatchSize)
	require.Equal(t, 64<<10, s.InlineBytes)
	a, err := wire.LoadArchiverConfig(envconf.FromMap(recoveryEnv(top, map[string]string{wire.EnvAlertTopicARN: "arn:aws:sns:us-east-1:1:alerts"})), top)
	require.NoError(t, err)
	require.Equal(t, "arn:aws:sns:us-east-1:1:alerts", a.AlertTopicARN)
	r, err := wire.LoadReplayConfig(envconf.FromMap(recoveryEnv(top, nil)), top)
	require.NoError(t, err)
	require.Equal(t, 64<<10, r.ClaimCheckBytes)

	for _, tc := range []struct {
		name string
		env  map[string]string
		load func(*envconf.Reader) error
		want string
	}{
		{"sweeper without tables", map[string]string{wire.EnvEventsTable: "", wire.EnvIncidentsTable: ""},
			func(r *envconf.Reader) error { _, err := wire.LoadSweeperConfig(r, top); return err }, "EVENTS_TABLE is required"},
		{"sweeper batch too large", map[string]string{wire.EnvSweepBatchSize: "500"},
			func(r *envconf.Reader) error { _, err := wire.LoadSweeperConfig(r, top); return err }, "SWEEP_BATCH_SIZE"},
		{"sweeper lease not a duration", map[string]string{wire.EnvSweepLease: "soon"},
			func(r *envconf.Reader) error { _, err := wire.LoadSweeperConfig(r, top); return err }, "SWEEP_LEASE"},
		{"archiver missing a DLQ", map[string]string{wire.EnvDLQARNs: `{"billing.events":"arn"}`},
			func(r *envconf.Reader) error { _, err := wire.LoadArchiverConfig(r, top); return err }, `no DLQ ARN for topic "crm.sync"`},
		{"archiver inline too big", map[string]string{wire.EnvIncidentInlineBytes: "999999"},
			func(r *envconf.Reader) error { _, err := wire.LoadArchiverConfig(r, top); return err }, "INCIDENT_INLINE_BYTES"},
		{"replay missing a queue", map[string]string{wire.EnvQueueURLs: `{}`},
			func(r *envconf.Reader) error { _, err := wire.LoadReplayConfig(r, top); return err }, "no queue URL"},
		{"replay short retention", map[string]string{wire.EnvRetention: "24h"},
			func(r *envconf.Reader) error { _, err := wire.LoadReplayConfig(r, top); return err }, "at least 7 days"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.load(envconf.FromMap(recoveryEnv(top, tc.env)))
			require.ErrorContains(t, err, tc.want)
		})
	}
}
