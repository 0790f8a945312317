package platform

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/cachepurge"
	"github.com/siteswarm/eventplatform/internal/dlqarchiver"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
	"github.com/siteswarm/eventplatform/internal/outboxsweep"
)

type alarm struct {
	Name, Metric, Namespace, Comparison string
	Dims                                map[string]string
	Threshold                           float64
	Actions, OKActions                  []string
}

func (s *synth) alarms(t *testing.T) map[string]alarm {
	t.Helper()
	out := map[string]alarm{}
	for _, r := range s.tpl.ofType("AWS::CloudWatch::Alarm") {
		p := r.Properties
		a := alarm{
			Name: str(p["AlarmName"]), Metric: str(p["MetricName"]), Namespace: str(p["Namespace"]),
			Comparison: str(p["ComparisonOperator"]), Threshold: num(t, p["Threshold"]), Dims: map[string]string{},
		}
		for _, d := range list(p["Dimensions"]) {
			v := dig(d, "Value")
			if id := refID(v); id != "" {
				a.Dims[str(dig(d, "Name"))] = id
			} else {
				a.Dims[str(dig(d, "Name"))] = str(v)
			}
		}
		// The stage's topic by reference, existing destinations by ARN.
		action := func(x any) string {
			if id := refID(x); id != "" {
				return id
			}
			return str(x)
		}
		for _, x := range list(p["AlarmActions"]) {
			a.Actions = append(a.Actions, action(x))
		}
		for _, x := range list(p["OKActions"]) {
			a.OKActions = append(a.OKActions, action(x))
		}
		out[a.Name] = a
	}
	return out
}

func TestAlarms(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		al := s.alarms(t)
		// Every alarm notifies the alert topic and the stage's existing
		// alarm topics (prod: one).
		want := append([]string{s.idOf(s.p.Alerts)}, s.p.Stage.AlarmTopicARNs...)
		if s.p.Stage.Name == "prod" {
			require.Equal(t, []string{testAlarmTopic}, s.p.Stage.AlarmTopicARNs)
		}
		for name, a := range al {
			require.Equal(t, want, a.Actions, "%s notifies the alert topic", name)
			require.Equal(t, want, a.OKActions, "%s notifies recovery too", name)
		}
		get := func(suffix string) alarm {
			t.Helper()
			a, ok := al[s.p.Stage.Prefix()+"-"+suffix]
			require.True(t, ok, "alarm %s", suffix)
			return a
		}
		for _, tp := range s.p.Topology.Topics {
			dlq := get(slug(tp.Name) + "-dlq-depth")
			require.Equal(t, "ApproximateNumberOfMessagesVisible", dlq.Metric)
			require.Equal(t, s.idOf(s.p.Queues[tp.Name].DLQ), dlq.Dims["QueueName"], tp.Name)
			require.Equal(t, 0.0, dlq.Threshold)
			require.Equal(t, "GreaterThanThreshold", dlq.Comparison)

			age := get(slug(tp.Name) + "-oldest-message")
			require.Equal(t, "ApproximateAgeOfOldestMessage", age.Metric)
			require.Equal(t, s.idOf(s.p.Queues[tp.Name].Queue), age.Dims["QueueName"], tp.Name)

			inc := get(slug(tp.Name) + "-incidents-opened")
			require.Equal(t, dlqarchiver.MetricIncidentsOpened, inc.Metric)
			require.Equal(t, metric.DefaultNamespace, inc.Namespace)
			require.Equal(t, map[string]string{"Topic": tp.Name, metric.DimensionStage: s.p.Stage.Prefix()}, inc.Dims,
				"the stage dimension keeps two stages in one account apart")
		}
		// Topics nobody consumes (HTTP topics without a subscriber, purge
		// without zones, outside production) are alarmed on their depth.
		require.NotContains(t, s.p.Unconsumed, "cache.purge", "both test stages name purge zones")
		failures, limited := get("purge-failures"), get("purge-rate-limited")
		require.Equal(t, cachepurge.MetricFailures, failures.Metric)
		require.Equal(t, 0.0, failures.Threshold)
		require.Equal(t, cachepurge.MetricRetries429, limited.Metric)
		require.Equal(t, map[string]string{metric.DimensionStage: s.p.Stage.Prefix()}, limited.Dims)
		for _, topic := range s.p.Unconsumed {
			a := get(slug(topic) + "-unconsumed")
			require.Equal(t, "ApproximateNumberOfMessagesVisible", a.Metric)
			require.Equal(t, s.idOf(s.p.Queues[topic].Queue), a.Dims["QueueName"])
		}
		ingestID, _ := s.function(t, "ingest")
		ingestErrors := get("ingest-errors")
		require.Equal(t, "Errors", ingestErrors.Metric)
		require.Equal(t, ingestID, ingestErrors.Dims["FunctionName"])

		lag := get("outbox-lag")
		require.Equal(t, outboxsweep.MetricLag, lag.Metric)
		require.Equal(t, map[string]string{"Function": "sweeper", metric.DimensionStage: s.p.Stage.Prefix()}, lag.Dims)
		require.Equal(t, metric.DefaultNamespace, lag.Namespace)
		require.Equal(t, outboxsweep.MetricAbandoned, get("outbox-abandoned").Metric)
		notRunning := get("sweeper-not-running")
		require.Equal(t, "LessThanThreshold", notRunning.Comparison)
	})
}
