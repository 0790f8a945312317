package platform

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
)

// The subscriber-health function: a one-minute schedule; it may get and
// update only the deployed consumers' own event source mappings (listing
// is "*", which AWS allows no narrower), read and replace the health
// records, read the topic queues' depth and publish alerts. The consumers
// and admin-api may invoke it and nothing else of Lambda; topic queues keep
// messages 14 days; each watched topic has an open-too-long alarm.
func TestSubscriberHealth(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		id, fn := s.function(t, RoleSubscriberHealth)
		require.Equal(t, s.p.Stage.Prefix()+"-subscriber-health", str(fn.Properties["FunctionName"]))
		rules := 0
		for _, r := range s.tpl.ofType("AWS::Events::Rule") {
			if refID(dig(list(r.Properties["Targets"])[0], "Arn")) == id {
				rules++
				require.Equal(t, "rate(1 minute)", str(r.Properties["ScheduleExpression"]))
			}
		}
		require.Equal(t, 1, rules)

		esms := map[string]bool{}
		for esmID, m := range s.tpl.ofType("AWS::Lambda::EventSourceMapping") {
			for _, c := range s.p.Consumers {
				if refID(m.Properties["FunctionName"]) == s.idOf(c.Fn) {
					esms[esmID] = true
				}
			}
		}
		require.NotEmpty(t, esms)
		var mappingActions int
		for _, st := range s.statements(roleOf(t, fn)) {
			for _, a := range st.Actions {
				switch {
				case a == "lambda:ListEventSourceMappings":
					require.Equal(t, []any{"*"}, st.Resources)
				case strings.HasPrefix(a, "lambda:"):
					require.Contains(t, []string{"lambda:GetEventSourceMapping", "lambda:UpdateEventSourceMapping"}, a)
					mappingActions++
					require.Len(t, st.Resources, len(esms), "exactly the consumers' mappings")
					for _, r := range st.Resources {
						key := resourceKey(r)
						found := false
						for esmID := range esms {
							found = found || strings.HasSuffix(key, "event-source-mapping:"+esmID)
						}
						require.True(t, found, "%s is not a consumer's mapping", key)
					}
				case strings.HasPrefix(a, "dynamodb:"):
					require.Contains(t, []string{"dynamodb:GetItem", "dynamodb:PutItem"}, a)
				case strings.HasPrefix(a, "sqs:"):
					require.Equal(t, "sqs:GetQueueAttributes", a)
				}
			}
		}
		require.Equal(t, 2, mappingActions)

		// The function's ARN as a policy names it (built from its name).
		isHealth := func(res string) bool {
			return strings.HasPrefix(res, "arn:") && strings.Contains(res, ":lambda:") &&
				strings.HasSuffix(res, ":function:"+s.p.Stage.Prefix()+"-subscriber-health")
		}
		for _, name := range []string{"admin-api"} {
			_, f := s.function(t, name)
			require.Equal(t, s.p.Stage.Prefix()+"-subscriber-health", str(dig(f.Properties, "Environment", "Variables", wire.EnvHealthFunction)))
			invokes := false
			for res, actions := range actionsOn(s.statements(roleOf(t, f))) {
				invokes = invokes || (isHealth(res) && slices.Contains(actions, "lambda:InvokeFunction"))
			}
			require.True(t, invokes, name)
		}
		for topic, c := range s.p.Consumers {
			_, f := s.function(t, c.Spec.Name)
			require.Equal(t, s.p.Stage.Prefix()+"-subscriber-health", str(dig(f.Properties, "Environment", "Variables", wire.EnvHealthFunction)), topic)
			for res, actions := range actionsOn(s.statements(roleOf(t, f))) {
				for _, a := range actions {
					if strings.HasPrefix(a, "lambda:") {
						require.Equal(t, "lambda:InvokeFunction", a, topic)
						require.True(t, isHealth(res), "%s: %s", topic, res)
					}
				}
			}
		}
		for _, tp := range s.p.Topology.Topics {
			q := s.tpl.Resources[s.idOf(s.p.Queues[tp.Name].Queue)].Properties
			require.EqualValues(t, topology.QueueRetention.Seconds(), num(t, q["MessageRetentionPeriod"]), tp.Name)
		}
		alarms := 0
		for _, a := range s.tpl.ofType("AWS::CloudWatch::Alarm") {
			if strings.HasSuffix(str(a.Properties["AlarmName"]), "-subscriber-down") {
				alarms++
				require.EqualValues(t, topology.DefaultEscalateAfter.Seconds(), num(t, a.Properties["Threshold"]))
			}
		}
		require.Equal(t, len(esms), alarms, "one per watched topic")
	})
}
