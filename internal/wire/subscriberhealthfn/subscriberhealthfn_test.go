package subscriberhealthfn_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/subscriberhealthfn"
)

func env(top topology.Topology, mut func(m map[string]string)) *envconf.Reader {
	urls := map[string]string{}
	for _, n := range top.TopicNames() {
		urls[n] = "https://sqs.eu-west-1.amazonaws.com/123456789012/evp-prod-" + n
	}
	m := map[string]string{
		wire.EnvEventsTable: "evp-prod-events", wire.EnvQueueURLs: testkit.MustJSON(urls), wire.EnvStage: "evp-prod",
		subscriberhealthfn.EnvMappings: testkit.MustJSON(map[string]subscriberhealthfn.Mapping{
			topology.Billing: {Function: "evp-prod-consumer-billing-events", QueueARN: "arn:aws:sqs:eu-west-1:123456789012:evp-prod-billing-events"},
			topology.CRM:     {Function: "evp-prod-consumer-crm-sync", QueueARN: "arn:aws:sqs:eu-west-1:123456789012:evp-prod-crm-sync"},
		}),
	}
	if mut != nil {
		mut(m)
	}
	return envconf.FromMap(m)
}

func TestHealthConfig(t *testing.T) {
	t.Parallel()
	top := topology.Default()
	c, err := subscriberhealthfn.Load(env(top, nil), top)
	require.NoError(t, err)
	require.Equal(t, time.Minute, c.Monitor.Period)
	var watched []string
	for _, tp := range c.Monitor.Topics {
		watched = append(watched, tp.Name)
	}
	require.ElementsMatch(t, []string{topology.Billing, topology.CRM}, watched, "exactly the topics with a deployed consumer")

	off := top.Clone()
	for i := range off.Topics {
		if off.Topics[i].Name == topology.CRM {
			off.Topics[i].Breaker.Off = true
		}
	}
	c, err = subscriberhealthfn.Load(env(off, nil), off)
	require.NoError(t, err)
	require.Len(t, c.Monitor.Topics, 1, "a topic without a breaker is not watched")

	for name, tc := range map[string]struct {
		mut  func(m map[string]string)
		want string
	}{
		"no table": {func(m map[string]string) { delete(m, wire.EnvEventsTable) }, wire.EnvEventsTable},
		"unknown topic": {func(m map[string]string) {
			m[subscriberhealthfn.EnvMappings] = `{"nope.events":{"function":"f","queueArn":"a"}}`
		}, `"nope.events", not a topic`},
		"no function":       {func(m map[string]string) { m[subscriberhealthfn.EnvMappings] = `{"crm.sync":{"queueArn":"a"}}` }, "needs a function"},
		"period too short":  {func(m map[string]string) { m[subscriberhealthfn.EnvPeriod] = "10ms" }, subscriberhealthfn.EnvPeriod},
		"malformed mapping": {func(m map[string]string) { m[subscriberhealthfn.EnvMappings] = `[` }, subscriberhealthfn.EnvMappings},
	} {
		_, err := subscriberhealthfn.Load(env(top, tc.mut), top)
		require.ErrorContains(t, err, tc.want, name)
	}
}
