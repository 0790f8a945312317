package wire_test

import (
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/admin"
	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/secret"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/adminfn"
	"github.com/siteswarm/eventplatform/internal/wire/dlqarchiverfn"
	"github.com/siteswarm/eventplatform/internal/wire/replayfn"
	"github.com/siteswarm/eventplatform/internal/wire/sweeperfn"
)

// stageEnv is the environment the CDK app gives the recovery and admin
// functions of a stage.
func stageEnv(top topology.Topology, extra map[string]string) *envconf.Reader {
	urls, dlqs, arns := map[string]string{}, map[string]string{}, map[string]string{}
	for _, n := range top.TopicNames() {
		urls[n] = "https://sqs.eu-west-1.amazonaws.com/123456789012/evp-prod-" + n
		dlqs[n] = urls[n] + "-dlq"
		arns[n] = "arn:aws:sqs:eu-west-1:123456789012:evp-prod-" + n + "-dlq"
	}
	m := map[string]string{
		wire.EnvEventsTable: "evp-prod-events", wire.EnvIncidentsTable: "evp-prod-incidents", wire.EnvBucket: "evp-prod-archive",
		wire.EnvPurgeTable: "evp-prod-purge", adminfn.EnvAdminTable: "evp-prod-admin", wire.EnvJobsTable: "evp-prod-jobs",
		wire.EnvQueueURLs: testkit.MustJSON(urls), wire.EnvDLQURLs: testkit.MustJSON(dlqs), wire.EnvDLQARNs: testkit.MustJSON(arns),
	}
	maps.Copy(m, extra)
	return envconf.FromMap(m)
}

func TestRecoveryConfigs(t *testing.T) {
	t.Parallel()
	top := topology.Default()

	s, err := sweeperfn.Load(stageEnv(top, nil), top)
	require.NoError(t, err)
	require.Equal(t, 50, s.Sweep.BatchSize)
	require.Equal(t, 64<<10, s.InlineBytes)
	require.Equal(t, 45*time.Minute, s.Sweep.SettleAfter)
	a, err := dlqarchiverfn.Load(stageEnv(top, map[string]string{dlqarchiverfn.EnvAlertTopicARN: "arn:aws:sns:us-east-1:1:alerts"}), top)
	require.NoError(t, err)
	require.Equal(t, "arn:aws:sns:us-east-1:1:alerts", a.AlertTopicARN)
	require.Equal(t, topology.Billing, a.Archiver.DLQTopics["arn:aws:sqs:eu-west-1:123456789012:evp-prod-billing.events-dlq"], "the archiver maps DLQ ARN → topic")
	r, err := replayfn.Load(stageEnv(top, nil), top)
	require.NoError(t, err)
	require.Equal(t, 64<<10, r.ClaimCheckBytes)
	require.Equal(t, 8, r.Replay.Concurrency)

	sweeper := func(r *envconf.Reader) error { _, err := sweeperfn.Load(r, top); return err }
	archiver := func(r *envconf.Reader) error { _, err := dlqarchiverfn.Load(r, top); return err }
	replay := func(r *envconf.Reader) error { _, err := replayfn.Load(r, top); return err }
	for _, tc := range []struct {
		name string
		env  map[string]string
		load func(*envconf.Reader) error
		want string
	}{
		{"sweeper without tables", map[string]string{wire.EnvEventsTable: "", wire.EnvIncidentsTable: ""}, sweeper, "EVENTS_TABLE is required"},
		{"sweeper batch too large", map[string]string{sweeperfn.EnvBatchSize: "500"}, sweeper, "batch size 500 must be 1..100"},
		{"sweeper lease not a duration", map[string]string{sweeperfn.EnvLease: "soon"}, sweeper, sweeperfn.EnvLease},
		{"sweeper settles too early", map[string]string{sweeperfn.EnvSettleAfter: "5m"}, sweeper, "settle-after 5m0s must be at least 15m"},
		{"archiver missing a DLQ", map[string]string{wire.EnvDLQARNs: `{"billing.events":"arn"}`}, archiver, `no DLQ ARN for topic "crm.sync"`},
		{"archiver inline too big", map[string]string{wire.EnvIncidentInlineBytes: "999999"}, archiver, wire.EnvIncidentInlineBytes + ": incident: inline body limit"},
		{"replay missing a queue", map[string]string{wire.EnvQueueURLs: `{}`}, replay, "no queue URL"},
		{"replay short retention", map[string]string{wire.EnvRetention: "24h"}, replay, "must be at least 168h"},
		{"replay stuck too soon", map[string]string{replayfn.EnvStuckAfter: "10s"}, replay, replayfn.EnvStuckAfter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorContains(t, tc.load(stageEnv(top, tc.env)), tc.want)
		})
	}
}

func TestAdminConfig(t *testing.T) {
	t.Parallel()
	top := topology.Default()
	const arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:evp-prod/admin-key-AbCdEf"
	c, err := adminfn.Load(stageEnv(top, map[string]string{adminfn.EnvKeySecretARN: arn}), top)
	require.NoError(t, err)
	require.Equal(t, arn, c.Keys.ARN)
	require.Empty(t, c.Keys.List)
	require.Equal(t, secret.DefaultRefresh, c.Keys.Keyring.Refresh)
	require.Equal(t, "evp-prod-incidents", c.Replay.IncidentsTable)
	require.Less(t, adminfn.FunctionTimeout, 30*time.Second, "under API Gateway's integration limit")
	require.Less(t, c.Admin.HealthTimeout, adminfn.FunctionTimeout)
	require.Equal(t, "evp-prod-admin", c.AdminTable)
	require.Equal(t, 8*time.Hour, c.Console.SessionTTL)
	require.Equal(t, time.Hour, c.Console.SessionIdle)
	require.Equal(t, admin.DefaultSignInFree, c.Console.SignIn.Free)

	c, err = adminfn.Load(stageEnv(top, map[string]string{adminfn.EnvKey: " local-key-123456 , local-key-654321 "}), top)
	require.NoError(t, err)
	require.Equal(t, []string{"local-key-123456", "local-key-654321"}, c.Keys.List)

	for name, tc := range map[string]struct {
		env  map[string]string
		want string
	}{
		"no key":             {nil, adminfn.EnvKeySecretARN + " (or, locally, " + adminfn.EnvKey + ") is required"},
		"both":               {map[string]string{adminfn.EnvKeySecretARN: arn, adminfn.EnvKey: "local-key-123456"}, "not both"},
		"short key":          {map[string]string{adminfn.EnvKey: "short"}, "key #1 is shorter than 12"},
		"refresh":            {map[string]string{adminfn.EnvKeySecretARN: arn, adminfn.EnvKeyRefresh: "5s"}, adminfn.EnvKeyRefresh + ": secret: refresh 5s must be 1m..1h"},
		"no DLQs":            {map[string]string{adminfn.EnvKeySecretARN: arn, wire.EnvDLQURLs: "{}"}, "has no DLQ URL for topic"},
		"no table":           {map[string]string{adminfn.EnvKeySecretARN: arn, wire.EnvEventsTable: ""}, wire.EnvEventsTable + " is required"},
		"bad duration":       {map[string]string{adminfn.EnvKeySecretARN: arn, adminfn.EnvKeyRefresh: "soon"}, "not a duration"},
		"slow health":        {map[string]string{adminfn.EnvKeySecretARN: arn, adminfn.EnvHealthTimeout: "1m"}, adminfn.EnvHealthTimeout},
		"no admin table":     {map[string]string{adminfn.EnvKeySecretARN: arn, adminfn.EnvAdminTable: ""}, adminfn.EnvAdminTable + " is required"},
		"endless session":    {map[string]string{adminfn.EnvKeySecretARN: arn, adminfn.EnvConsoleSessionTTL: "720h"}, adminfn.EnvConsoleSessionTTL},
		"idle over lifetime": {map[string]string{adminfn.EnvKeySecretARN: arn, adminfn.EnvConsoleSessionTTL: "1h", adminfn.EnvConsoleSessionIdle: "2h"}, "idle limit 2h0m0s must be 1m..the session lifetime (1h0m0s)"},
		"no free sign-in":    {map[string]string{adminfn.EnvKeySecretARN: arn, adminfn.EnvConsoleSignInFree: "-1"}, "free sign-in attempts"},
	} {
		_, err := adminfn.Load(stageEnv(top, tc.env), top)
		require.ErrorContains(t, err, tc.want, name)
		require.NotContains(t, err.Error(), "local-key", "%s: errors never quote a key", name)
	}
}

// The erasure looks under the incidents' prefixes again once every writer
// that may have read an event before its erasure marker is done: the DLQ
// archiver and the sweeper store a body or payload copy there before the
// incident write the marker refuses, each within one invocation.
// jobkinds.WriterWindow must outlast both functions' timeouts.
func TestTheErasureOutwaitsEveryWriter(t *testing.T) {
	t.Parallel()
	for name, timeout := range map[string]time.Duration{"sweeper": sweeperfn.FunctionTimeout, "dlq-archiver": dlqarchiverfn.FunctionTimeout} {
		require.Greater(t, jobkinds.WriterWindow, timeout, "%s may still store a copy after the erasure looked", name)
	}
}
