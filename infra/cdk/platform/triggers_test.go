package platform

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
)

// Every trigger in the template is a deployed function's descriptor's, and
// every descriptor's trigger is in the template: its EventBridge rules
// (name, schedule expression, input, retries, event age), its SQS event
// source mappings (queue, batch size, window, maximum concurrency, partial
// batch responses) and its routes. The local stack reads the same
// descriptors (devstack.TestLocalTriggersAreTheDescriptors); make
// boot-check compares the two directly.
func TestTriggersAreTheDescriptors(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		fnByID := map[string]*Function{}
		for _, f := range s.p.Functions {
			fnByID[s.idOf(f.Fn)] = f
		}
		queueByID := map[string]string{}
		for id, q := range s.tpl.ofType("AWS::SQS::Queue") {
			queueByID[id] = strings.TrimPrefix(str(q.Properties["QueueName"]), s.p.Stage.Prefix()+"-")
		}

		var want, got []string
		for _, f := range s.p.Functions {
			d := f.Spec.Descriptor
			for _, sch := range d.Schedules {
				want = append(want, ruleRow(d.Name, s.p.Stage.Prefix()+"-"+sch.Rule, sch.Expression(), inputOf(t, sch), sch.RetryAttempts, int(sch.MaxEventAge.Seconds())))
			}
			for _, src := range d.Queues {
				for _, q := range queueNames(s.p.Topology, src) {
					want = append(want, mappingRow(d.Name, q, src.BatchSize, int(src.BatchWindow.Seconds()), src.MaxConcurrency, src.ReportFailures))
				}
			}
		}
		for _, r := range s.tpl.ofType("AWS::Events::Rule") {
			if r.Properties["EventBusName"] != nil {
				// Not a schedule: the rule on Stripe's partner event bus,
				// the stage's (TestStripeEventBridgeDeployment).
				continue
			}
			target := list(r.Properties["Targets"])
			require.Len(t, target, 1)
			f, ok := fnByID[refID(dig(target[0], "Arn"))]
			require.True(t, ok, "rule %s targets a function of the stack", str(r.Properties["Name"]))
			retries := int(num(t, dig(target[0], "RetryPolicy", "MaximumRetryAttempts")))
			age := int(num(t, dig(target[0], "RetryPolicy", "MaximumEventAgeInSeconds")))
			got = append(got, ruleRow(f.Spec.Name, str(r.Properties["Name"]), str(r.Properties["ScheduleExpression"]), str(dig(target[0], "Input")), retries, age))
		}
		for _, m := range s.tpl.ofType("AWS::Lambda::EventSourceMapping") {
			p := m.Properties
			f, ok := fnByID[refID(p["FunctionName"])]
			require.True(t, ok)
			window, maxConc := 0, 0
			if v := p["MaximumBatchingWindowInSeconds"]; v != nil {
				window = int(num(t, v))
			}
			if v := dig(p, "ScalingConfig", "MaximumConcurrency"); v != nil {
				maxConc = int(num(t, v))
			}
			report := fmt.Sprint(p["FunctionResponseTypes"]) == "[ReportBatchItemFailures]"
			got = append(got, mappingRow(f.Spec.Name, queueByID[refID(p["EventSourceArn"])], int(num(t, p["BatchSize"])), window, maxConc, report))
		}
		require.NotEmpty(t, want)
		require.ElementsMatch(t, want, got)

		// Routes: the descriptors' route keys are the API's.
		var routes, keys []string
		for _, f := range s.p.Functions {
			for _, r := range f.Spec.Descriptor.Routes {
				routes = append(routes, r.Key())
			}
		}
		for _, r := range s.tpl.ofType("AWS::ApiGatewayV2::Route") {
			keys = append(keys, str(r.Properties["RouteKey"]))
		}
		require.ElementsMatch(t, routes, keys)
	})
}

func ruleRow(fn, rule, expr, input string, retries, age int) string {
	return fmt.Sprintf("%s: %s %s input %s retries %d age %ds", fn, rule, expr, input, retries, age)
}

func mappingRow(fn, queue string, batch, window, maxConc int, report bool) string {
	return fmt.Sprintf("%s <- %s batch %d window %ds max %d partial %v", fn, queue, batch, window, maxConc, report)
}

// inputOf is a schedule's input as the template writes it (keys sorted).
func inputOf(t *testing.T, sch wire.Schedule) string {
	if sch.Input == nil {
		return ""
	}
	b, err := json.Marshal(sch.Input)
	require.NoError(t, err)
	return string(b)
}

// queueNames are an event source's queues, by name under the stage prefix.
func queueNames(top topology.Topology, src wire.QueueSource) []string {
	switch src.Queue {
	case wire.QueueTopicDLQs:
		var out []string
		for _, tp := range top.Topics {
			out = append(out, strings.TrimPrefix(tp.DLQName("x"), "x-"))
		}
		return out
	case wire.QueueTopic:
		tp, _ := top.Topic(src.Topic)
		return []string{strings.TrimPrefix(tp.QueueName("x"), "x-")}
	}
	return []string{src.Queue}
}

// What a descriptor publishes and reads is in the template: each route
// output (the route's URL) and each secret — created, named in the
// function's environment, readable by that function, its ARN published
// where the descriptor says.
func TestSecretsAndOutputsAreTheDescriptors(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		checked := 0
		for _, f := range s.p.Functions {
			d := f.Spec.Descriptor
			_, fn := s.function(t, d.Name)
			env := dig(fn.Properties, "Environment", "Variables").(map[string]any)
			reads := actionsOn(s.statements(roleOf(t, fn)))
			for _, sec := range d.Secrets {
				id := s.idOf(s.p.Secrets.byID[sec.ID])
				require.Equal(t, id, refID(env[sec.EnvARN]), "%s names its secret %s in %s", d.Name, sec.ID, sec.EnvARN)
				require.Equal(t, []string{"secretsmanager:GetSecretValue"}, reads[id], d.Name)
				if o := sec.Output; o != nil {
					require.Equal(t, id, refID(s.tpl.Outputs[o.ID]["Value"]), o.ID)
				}
				checked++
			}
			for _, r := range d.Routes {
				if o := r.Output; o != nil {
					require.Contains(t, fmt.Sprint(s.tpl.Outputs[o.ID]["Value"]), r.Path, o.ID)
					checked++
				}
			}
		}
		require.NotZero(t, checked)
	})
}
