package platform

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	"github.com/siteswarm/eventplatform/internal/wire/stripeeventbridgefn"
)

// Stripe through Amazon EventBridge: with stripeEventBridgeSource (prod),
// a partner event bus of that name, a rule on it matching Stripe's source
// that targets stripe-eventbridge with a DLQ (encrypted, TLS only,
// alarmed) and bounded retries, the function's asynchronous failures on
// the same DLQ, and a role that may invoke ingest and read Stripe's
// account map and nothing else; without it (dev), none of that.
func TestStripeEventBridgeDeployment(t *testing.T) {
	t.Parallel()
	t.Run("prod", func(t *testing.T) {
		s := prod
		source := s.p.Stage.StripeEventBridgeSource
		require.NotEmpty(t, source)
		busID := s.idOf(s.p.StripeEventBridge.Bus)
		bus := s.tpl.Resources[busID]
		require.Equal(t, "AWS::Events::EventBus", bus.Type)
		require.Equal(t, source, bus.Properties["EventSourceName"])
		require.Equal(t, source, bus.Properties["Name"], "a partner bus is named after its event source")

		fnID, fn := s.function(t, stripeeventbridgefn.Name)
		dlqID := s.idOf(s.p.StripeEventBridge.DLQ)
		dlq := s.tpl.Resources[dlqID].Properties
		require.Equal(t, true, dlq["SqsManagedSseEnabled"])
		require.EqualValues(t, dlqRetention.Seconds(), num(t, dlq["MessageRetentionPeriod"]))

		rules := 0
		for id, r := range s.tpl.ofType("AWS::Events::Rule") {
			if refID(r.Properties["EventBusName"]) != busID {
				continue
			}
			rules++
			require.Equal(t, s.idOf(s.p.StripeEventBridge.Rule), id)
			require.Equal(t, []any{map[string]any{"prefix": stripe.PartnerSourcePrefix}}, dig(r.Properties, "EventPattern", "source"))
			targets := list(r.Properties["Targets"])
			require.Len(t, targets, 1)
			require.Equal(t, fnID, refID(dig(targets[0], "Arn")))
			require.Equal(t, dlqID, refID(dig(targets[0], "DeadLetterConfig", "Arn")))
			require.EqualValues(t, stripeEventBridgeRuleRetries, num(t, dig(targets[0], "RetryPolicy", "MaximumRetryAttempts")))
			require.EqualValues(t, stripeEventBridgeRuleMaxAge.Seconds(), num(t, dig(targets[0], "RetryPolicy", "MaximumEventAgeInSeconds")))
		}
		require.Equal(t, 1, rules, "one rule on the partner bus")

		// Only this rule may invoke the function.
		invokers := 0
		for _, perm := range s.tpl.ofType("AWS::Lambda::Permission") {
			if refID(perm.Properties["FunctionName"]) == fnID {
				invokers++
				require.Equal(t, "events.amazonaws.com", perm.Properties["Principal"])
				require.Equal(t, s.idOf(s.p.StripeEventBridge.Rule), refID(perm.Properties["SourceArn"]))
			}
		}
		require.Equal(t, 1, invokers)

		// The DLQ's policy lets that rule, and nothing else, send to it.
		ruleSends := 0
		for _, pol := range s.tpl.ofType("AWS::SQS::QueuePolicy") {
			for _, ref := range list(pol.Properties["Queues"]) {
				if refID(ref) != dlqID {
					continue
				}
				for _, st := range parseStatements(pol.Properties["PolicyDocument"]) {
					if st.Effect == "Allow" && mustJSON(st.Principal) == `{"Service":"events.amazonaws.com"}` {
						ruleSends++
						require.Contains(t, st.Actions, "sqs:SendMessage")
						require.Contains(t, mustJSON(st.Condition), s.idOf(s.p.StripeEventBridge.Rule))
					}
				}
			}
		}
		require.Equal(t, 1, ruleSends)

		asyncs := 0
		for _, c := range s.tpl.ofType("AWS::Lambda::EventInvokeConfig") {
			if refID(c.Properties["FunctionName"]) != fnID {
				continue
			}
			asyncs++
			require.EqualValues(t, stripeEventBridgeFnRetries, num(t, c.Properties["MaximumRetryAttempts"]))
			require.EqualValues(t, stripeEventBridgeFnMaxAge.Seconds(), num(t, c.Properties["MaximumEventAgeInSeconds"]))
			require.Contains(t, mustJSON(dig(c.Properties, "DestinationConfig", "OnFailure", "Destination")), dlqID)
		}
		require.Equal(t, 1, asyncs)

		acts := actionsOn(s.statements(roleOf(t, fn)))
		ingestID, _ := s.function(t, "ingest")
		require.Equal(t, []string{"lambda:InvokeFunction"}, acts[ingestID])
		require.Contains(t, acts[dlqID], "sqs:SendMessage", "its failed asynchronous invocations go to the DLQ")
		for res, a := range acts {
			switch {
			case res == ingestID, res == dlqID, res == "*", res == s.idOf(s.p.Functions[stripeeventbridgefn.Name].LogGroup):
			default:
				require.Subset(t, []string{"ssm:GetParametersByPath"}, a, "%s on %s", a, res)
			}
		}
		require.Contains(t, mustJSON(fn.Properties["Environment"]), `"STRIPE_TENANT_MAP":"{\"default\":\"platform\"}"`, "Stripe's default tenant, as webhook-stripe's")

		alarmed := false
		for _, a := range s.tpl.ofType("AWS::CloudWatch::Alarm") {
			if a.Properties["AlarmName"] == s.p.Stage.Prefix()+"-stripe-eventbridge-dlq" {
				alarmed = true
				require.Contains(t, mustJSON(a.Properties["Dimensions"]), dlqID)
				require.NotEmpty(t, a.Properties["AlarmActions"])
			}
		}
		require.True(t, alarmed)
	})
	t.Run("dev", func(t *testing.T) {
		s := dev
		require.Empty(t, s.p.Stage.StripeEventBridgeSource)
		require.Nil(t, s.p.StripeEventBridge)
		require.Empty(t, s.tpl.ofType("AWS::Events::EventBus"), "no partner bus")
		require.Nil(t, s.p.Functions[stripeeventbridgefn.Name], "no function nothing could invoke")
		for _, r := range s.tpl.ofType("AWS::Events::Rule") {
			require.Nil(t, r.Properties["EventBusName"], "only the default bus's schedules")
		}
	})
}

func TestStripeEventBridgeSourceIsStripes(t *testing.T) {
	t.Parallel()
	for src, ok := range map[string]bool{
		"aws.partner/stripe.com/ed_61RuLnKvTVZiUwVx716RuLg6WVSQEdQ2lbUChXvvA8AK": true,
		"aws.partner/github.com/123":      false,
		"aws.partner/stripe.com/":         false,
		"aws.partner/stripe.com/ed_1 x":   false,
		"arn:aws:events:eu-west-1:1:x/ed": false,
	} {
		st := Stage{Name: "x", StripeEventBridgeSource: src}
		st.applyDefaults()
		err := st.Validate()
		if ok {
			require.NoError(t, err, src)
		} else {
			require.ErrorContains(t, err, "stripeEventBridgeSource", src)
		}
	}
}
