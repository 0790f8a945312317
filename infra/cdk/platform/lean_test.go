package platform

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/topology"
)

// A production stage without the purge service (no Cloudflare) and
// without one HTTP topic's subscriber synthesizes when it says so
// (unconsumedTopics): it refused to, naming the Cloudflare zones and every
// subscriber URL. Those topics get no consumer, no subscriber secret and
// no Cloudflare token; their queues stay, alarmed as unconsumed; the rest
// of the stage is the production stage, nag-clean and valid.
func TestProductionStageWithoutPurgeOrAnHTTPTopic(t *testing.T) {
	t.Parallel()
	require.NoError(t, leanErr, "the lean production stage loads and fits the topology")
	require.NotNil(t, lean)
	require.True(t, lean.p.Stage.Production)
	require.ElementsMatch(t, []string{topology.CachePurge, topology.CRM, topology.Integrations}, lean.p.Unconsumed)

	names := map[string]bool{}
	for _, r := range lean.tpl.ofType("AWS::Lambda::Function") {
		if n, ok := r.Properties["FunctionName"].(string); ok {
			names[n] = true
		}
	}
	prefix := lean.p.Stage.Prefix() + "-"
	require.False(t, names[prefix+"consumer-cache-purge"], "no purge consumer")
	require.False(t, names[prefix+"consumer-crm-sync"], "no CRM consumer")
	require.True(t, names[prefix+"consumer-billing-events"])
	require.True(t, names[prefix+"consumer-notifications-events"])

	al := lean.alarms(t)
	for _, topic := range []string{topology.CachePurge, topology.CRM} {
		_, ok := al[prefix+slug(topic)+"-unconsumed"]
		require.True(t, ok, "%s is alarmed as unconsumed", topic)
	}
	require.Nil(t, lean.p.Secrets.CloudflareToken, "no Cloudflare token to set")
	require.NotContains(t, lean.p.Secrets.Subscribers, topology.CRM, "no subscriber secret for a topic nobody consumes")
	require.Contains(t, lean.p.Secrets.Subscribers, topology.Billing)
	outputs, _ := lean.raw["Outputs"].(map[string]any)
	_, ok := outputs["CloudflareTokenSecret"]
	require.False(t, ok)

	require.Empty(t, lean.errors, "cdk-nag")
	require.Empty(t, lean.warnings, "cdk-nag")
	v := validate(t, map[string]map[string]any{"lean": lean.raw})
	require.True(t, v.OK, "%+v", v.Findings)
}

// unconsumedTopics is checked against the topology and the rest of the
// stage: a topic that is not an HTTP or the purge topic, or one the stage
// also configures, is refused; without it a production stage still refuses
// a forgotten subscriber and says how to leave the topic out.
func TestUnconsumedTopicsAreChecked(t *testing.T) {
	t.Parallel()
	base, err := cdkContext("../../../cdk.json")
	require.NoError(t, err)
	for _, c := range []struct {
		over map[string]any
		want string
	}{
		{map[string]any{"unconsumedTopics": `["audit.events"]`}, `unconsumedTopics names "audit.events", which is not an HTTP topic or the purge topic`},
		{map[string]any{"unconsumedTopics": `["nope.events"]`}, `unconsumedTopics names "nope.events"`},
		{map[string]any{"unconsumedTopics": `["crm.sync"]`}, "crm.sync is in unconsumedTopics and has a subscriber URL"},
		{map[string]any{"unconsumedTopics": `["cache.purge"]`}, "cache.purge is in unconsumedTopics and the stage names Cloudflare zones"},
		{map[string]any{"subscribers": `{"billing.events":"https://b.example.com/h","notifications.events":"https://n.example.com/h"}`},
			"set the subscriber URL of crm.sync (subscribers; copy " + ExampleStageFile},
	} {
		over := map[string]any{CtxStage: "prod", CtxStageFile: "../stages/prod.example.json"}
		for k, v := range c.over {
			over[k] = v
		}
		s, err := LoadStage(lookup(base, over))
		require.NoError(t, err, c.over)
		err = s.CheckTopology(topology.Default())
		require.ErrorContains(t, err, c.want, c.over)
		if c.over["subscribers"] != nil {
			require.ErrorContains(t, err, "or list it in unconsumedTopics")
		}
	}
	// The stage file takes it as a JSON list too.
	var file map[string]any
	require.NoError(t, json.Unmarshal([]byte(`{"unconsumedTopics":["crm.sync"]}`), &file))
	var s Stage
	require.NoError(t, decodeStrict(file, &s))
	require.Equal(t, []string{"crm.sync"}, s.UnconsumedTopics)
}
