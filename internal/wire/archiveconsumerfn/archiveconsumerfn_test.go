package archiveconsumerfn_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/archiveconsumerfn"
	"github.com/siteswarm/eventplatform/internal/wire/consumerfn"
)

func env(topic string, mut func(m map[string]string)) *envconf.Reader {
	m := map[string]string{
		consumerfn.EnvTopic: topic, consumerfn.EnvQueueURL: "https://sqs.example/q", consumerfn.EnvDLQURL: "https://sqs.example/dlq",
		wire.EnvEventsTable: "events", wire.EnvIncidentsTable: "incidents", wire.EnvBucket: "bucket",
	}
	if mut != nil {
		mut(m)
	}
	return envconf.FromMap(m)
}

func TestLoad(t *testing.T) {
	t.Parallel()
	cfg, err := archiveconsumerfn.Load(env(topology.Audit, nil), topology.Default())
	require.NoError(t, err)
	require.Equal(t, "archive", cfg.Prefix)
	require.Equal(t, "bucket", cfg.Bucket)
	for name, tc := range map[string]struct {
		topic string
		mut   func(m map[string]string)
		want  string
	}{
		"http topic":    {topology.Billing, nil, `"http" consumer`},
		"no bucket":     {topology.Audit, func(m map[string]string) { delete(m, wire.EnvBucket) }, wire.EnvBucket},
		"slashy prefix": {topology.Audit, func(m map[string]string) { m[archiveconsumerfn.EnvPrefix] = "/archive/" }, archiveconsumerfn.EnvPrefix},
		"slow backoff":  {topology.Audit, func(m map[string]string) { m[consumerfn.EnvBackoffBase] = "2h" }, consumerfn.EnvBackoffBase},
	} {
		_, err := archiveconsumerfn.Load(env(tc.topic, tc.mut), topology.Default())
		require.ErrorContains(t, err, tc.want, name)
	}
}
