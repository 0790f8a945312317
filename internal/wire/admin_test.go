package wire_test

import (
	"encoding/json"
	"maps"
	"testing"
	"time"

	"github.com/siteswarm/eventplatform/internal/secret"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
)

func adminEnv(extra map[string]string) map[string]string {
	top := topology.Default()
	queues, dlqs := map[string]string{}, map[string]string{}
	for _, n := range top.TopicNames() {
		queues[n] = "https://sqs.eu-west-1.amazonaws.com/123456789012/evp-prod-" + n
		dlqs[n] = queues[n] + "-dlq"
	}
	q, _ := json.Marshal(queues)
	d, _ := json.Marshal(dlqs)
	env := map[string]string{
		wire.EnvEventsTable: "evp-prod-events", wire.EnvIncidentsTable: "evp-prod-incidents", wire.EnvBucket: "evp-prod-archive",
		wire.EnvQueueURLs: string(q), wire.EnvDLQURLs: string(d),
	}
	maps.Copy(env, extra)
	return env
}

func TestLoadAdminConfig(t *testing.T) {
	t.Parallel()
	top := topology.Default()
	const arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:evp-prod/admin-key-AbCdEf"
	c, err := wire.LoadAdminConfig(envconf.FromMap(adminEnv(map[string]string{wire.EnvAdminKeySecretARN: arn})), top)
	require.NoError(t, err)
	require.Equal(t, arn, c.KeySecretARN)
	require.Empty(t, c.Keys)
	require.Equal(t, secret.DefaultRefresh, c.KeyRefresh)
	require.Equal(t, "evp-prod-incidents", c.Replay.IncidentsTable)
	require.Less(t, wire.AdminFunctionTimeout, 30*time.Second, "under API Gateway's integration limit")

	c, err = wire.LoadAdminConfig(envconf.FromMap(adminEnv(map[string]string{wire.EnvAdminKey: " local-key-123456 , local-key-654321 "})), top)
	require.NoError(t, err)
	require.Equal(t, []string{"local-key-123456", "local-key-654321"}, c.Keys)

	for name, tc := range map[string]struct {
		env  map[string]string
		want string
	}{
		"no key":       {adminEnv(nil), wire.EnvAdminKeySecretARN + " (or, locally, " + wire.EnvAdminKey + ") is required"},
		"both":         {adminEnv(map[string]string{wire.EnvAdminKeySecretARN: arn, wire.EnvAdminKey: "local-key-123456"}), "not both"},
		"short key":    {adminEnv(map[string]string{wire.EnvAdminKey: "short"}), "key #1 is shorter than 12"},
		"refresh":      {adminEnv(map[string]string{wire.EnvAdminKeySecretARN: arn, wire.EnvAdminKeyRefresh: "5s"}), wire.EnvAdminKeyRefresh + " must be 1m..1h"},
		"no DLQs":      {adminEnv(map[string]string{wire.EnvAdminKeySecretARN: arn, wire.EnvDLQURLs: "{}"}), "has no DLQ URL for topic"},
		"no table":     {adminEnv(map[string]string{wire.EnvAdminKeySecretARN: arn, wire.EnvEventsTable: ""}), wire.EnvEventsTable + " is required"},
		"bad duration": {adminEnv(map[string]string{wire.EnvAdminKeySecretARN: arn, wire.EnvAdminKeyRefresh: "soon"}), "not a duration"},
	} {
		_, err := wire.LoadAdminConfig(envconf.FromMap(tc.env), top)
		require.ErrorContains(t, err, tc.want, name)
		require.NotContains(t, err.Error(), "local-key", "%s: errors never quote a key", name)
	}
}
