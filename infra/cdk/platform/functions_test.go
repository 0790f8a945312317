package platform

import (
	"github.com/siteswarm/eventplatform/internal/wire/catalog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/observe/costmodel"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/wire/dlqarchiverfn"
)

// Every function: Go on provided.al2023/arm64, JSON logs at the stage's
// level into its own log group with the stage's retention, active tracing,
// its own role.
func TestFunctionsRuntimeLoggingTracing(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		fns := s.tpl.ofType("AWS::Lambda::Function")
		roles := map[string]string{}
		for name, f := range s.p.Functions {
			_, fn := s.function(t, name)
			props := fn.Properties
			require.Equal(t, "provided.al2023", props["Runtime"], name)
			require.Equal(t, []any{"arm64"}, props["Architectures"], name)
			require.Equal(t, "bootstrap", props["Handler"], name)
			require.Equal(t, "Active", dig(props, "TracingConfig", "Mode"), name)
			require.Equal(t, "JSON", dig(props, "LoggingConfig", "LogFormat"), name)
			require.Equal(t, s.p.Stage.LogLevel, dig(props, "LoggingConfig", "ApplicationLogLevel"), name)
			// No START/END/REPORT records (INFO-level system logs): the cost
			// model (TestCostPerPath) counts no platform log bytes.
			require.Equal(t, "WARN", dig(props, "LoggingConfig", "SystemLogLevel"), name)
			logGroup := s.idOf(f.LogGroup)
			require.Equal(t, logGroup, refID(dig(props, "LoggingConfig", "LogGroup")), name)
			lg := s.tpl.Resources[logGroup].Properties
			require.Equal(t, "/aws/lambda/"+s.p.Stage.Prefix()+"-"+name, lg["LogGroupName"])
			require.Equal(t, float64(s.p.Stage.LogRetentionDays), num(t, lg["RetentionInDays"]), name)
			role := roleOf(t, fn)
			require.NotContains(t, roles, role, "%s shares a role with %s", name, roles[role])
			roles[role] = name
			require.Nil(t, s.tpl.Resources[role].Properties["ManagedPolicyArns"], "%s: no managed policies", name)
		}
		// Besides ours, only CDK's bucket auto-delete provider (stages that
		// do not retain data).
		// Its function logs to a group of ours with the stage's retention.
		for id, fn := range fns {
			if strings.HasPrefix(id, "CustomS3AutoDeleteObjects") {
				require.False(t, s.p.Stage.Retained(), "a retained stage never auto-deletes objects")
				require.NotNil(t, s.p.AutoDeleteLogs)
				lg := s.tpl.Resources[s.idOf(s.p.AutoDeleteLogs)].Properties
				require.Equal(t, s.idOf(s.p.AutoDeleteLogs), refID(dig(fn.Properties, "LoggingConfig", "LogGroup")), "the provider logs to its own group")
				require.Equal(t, float64(s.p.Stage.LogRetentionDays), num(t, lg["RetentionInDays"]))
				delete(fns, id)
			}
			// And CDK's bucket notifications handler (imports/ → SQS),
			// logging to a group of ours.
			if strings.HasPrefix(id, "BucketNotificationsHandler") {
				require.NotNil(t, s.p.NotificationsLogs)
				require.Equal(t, s.idOf(s.p.NotificationsLogs), refID(dig(fn.Properties, "LoggingConfig", "LogGroup")))
				lg := s.tpl.Resources[s.idOf(s.p.NotificationsLogs)].Properties
				require.Equal(t, float64(s.p.Stage.LogRetentionDays), num(t, lg["RetentionInDays"]))
				delete(fns, id)
			}
		}
		require.Len(t, fns, len(s.p.Functions), "every function is one of ours")
	})
}

// Reserved concurrency is a stage setting: nothing by default (a fresh
// account deploys), the recommended set or function by function when the
// stage asks, and the template reserves exactly that.
func TestReservedConcurrency(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		total := 0
		for name := range s.p.Functions {
			_, fn := s.function(t, name)
			want := s.p.Stage.Reservation(name)
			if want == 0 {
				require.Nil(t, fn.Properties["ReservedConcurrentExecutions"], name)
				continue
			}
			require.EqualValues(t, want, num(t, fn.Properties["ReservedConcurrentExecutions"]), name)
			total += want
		}
		if total == 0 {
			require.Zero(t, s.p.Stage.RequiredConcurrencyQuota())
		} else {
			require.Equal(t, total+UnreservedMinimum, s.p.Stage.RequiredConcurrencyQuota())
		}
		for topic := range s.p.Consumers {
			_, fn := s.function(t, "consumer-"+slug(topic))
			require.Nil(t, fn.Properties["ReservedConcurrentExecutions"], "%s: bounded by its event source's maximum concurrency", topic)
		}
	})
	require.Zero(t, dev.p.Stage.RequiredConcurrencyQuota(), "dev reserves nothing: a default account deploys it")
	require.Equal(t, 150+150+10+3+2+UnreservedMinimum, prod.p.Stage.RequiredConcurrencyQuota(), "the example production stage reserves the recommended set")
}

// The HTTP API has exactly the webhook and admin routes, a throttled stage
// with JSON access logs, and a stricter admin throttle.
func TestAPI(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		var keys []string
		integrations := s.tpl.ofType("AWS::ApiGatewayV2::Integration")
		webhookID, _ := s.function(t, "webhook-stripe")
		// Every provider's route (catalog.Webhooks) and the function
		// serving it.
		webhookRoutes := map[string]string{}
		for _, wh := range catalog.Webhooks() {
			id, _ := s.function(t, wh.Name)
			webhookRoutes[wh.Routes[0].Key()] = id
		}
		adminID, _ := s.function(t, "admin-api")
		for _, r := range s.tpl.ofType("AWS::ApiGatewayV2::Route") {
			key := str(r.Properties["RouteKey"])
			keys = append(keys, key)
			target := str(r.Properties["Target"])
			if target == "" {
				target = resourceKey(r.Properties["Target"])
			}
			integ := ""
			for id := range integrations {
				if strings.Contains(target, id) {
					integ = id
				}
			}
			require.NotEmpty(t, integ, "route %s has no integration", key)
			fn := refID(integrations[integ].Properties["IntegrationUri"])
			if wh, ok := webhookRoutes[key]; ok {
				require.Equal(t, wh, fn, "%s is served by its provider's function", key)
			}
			switch key {
			case "POST " + PathWebhookStripe:
				require.Equal(t, webhookID, fn)
			case "ANY " + PathAdmin, "ANY " + PathConsole, "ANY " + PathConsole + "/{proxy+}":
				require.Equal(t, adminID, fn, "%s is served by the admin function", key)
			}
			require.Equal(t, "2.0", integrations[integ].Properties["PayloadFormatVersion"])
			at := str(r.Properties["AuthorizationType"])
			require.True(t, at == "" || at == "NONE", "%s: the functions authenticate (signature, bearer key), got %q", key, at)
		}
		want := []string{"ANY " + PathAdmin, "ANY " + PathConsole, "ANY " + PathConsole + "/{proxy+}"}
		for key := range webhookRoutes {
			want = append(want, key)
		}
		require.ElementsMatch(t, want, keys, "the admin routes and every provider's webhook route")

		stagesOf := s.tpl.ofType("AWS::ApiGatewayV2::Stage")
		require.Len(t, stagesOf, 1)
		for _, st := range stagesOf {
			p := st.Properties
			require.Equal(t, "$default", p["StageName"])
			require.Equal(t, float64(s.p.Stage.APIRateLimit), num(t, dig(p, "DefaultRouteSettings", "ThrottlingRateLimit")))
			require.Equal(t, float64(s.p.Stage.APIBurstLimit), num(t, dig(p, "DefaultRouteSettings", "ThrottlingBurstLimit")))
			for _, key := range []string{"ANY " + PathAdmin, "ANY " + PathConsole, "ANY " + PathConsole + "/{proxy+}"} {
				require.Equal(t, float64(10), num(t, dig(p, "RouteSettings", key, "ThrottlingRateLimit")), key)
				require.Equal(t, float64(20), num(t, dig(p, "RouteSettings", key, "ThrottlingBurstLimit")), key)
			}
			require.NotEmpty(t, refID(dig(p, "AccessLogSettings", "DestinationArn")))
			format := str(dig(p, "AccessLogSettings", "Format"))
			require.Contains(t, format, "$context.requestId")
			require.NotContains(t, format, "authorization", "access logs never carry credentials")
		}
	})
}

// Recovery plane: sweeper every 2 minutes, archiver on every DLQ, replay
// state machine with bounded Map, logging and tracing.
func TestRecoveryPlane(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		sweeperID, _ := s.function(t, "sweeper")
		sweeps := 0
		for _, r := range s.tpl.ofType("AWS::Events::Rule") {
			targets := list(r.Properties["Targets"])
			require.Len(t, targets, 1)
			if refID(dig(targets[0], "Arn")) == sweeperID {
				sweeps++
				require.Equal(t, "rate(2 minutes)", r.Properties["ScheduleExpression"])
			}
		}
		require.Equal(t, 1, sweeps)

		archiverID, archiverFn := s.function(t, "dlq-archiver")
		var sources []string
		for _, m := range s.tpl.ofType("AWS::Lambda::EventSourceMapping") {
			if refID(m.Properties["FunctionName"]) == archiverID {
				sources = append(sources, refID(m.Properties["EventSourceArn"]))
				require.Equal(t, []any{"ReportBatchItemFailures"}, m.Properties["FunctionResponseTypes"])
			}
		}
		var dlqs []string
		for _, tp := range s.p.Topology.Topics {
			dlqID := s.idOf(s.p.Queues[tp.Name].DLQ)
			dlqs = append(dlqs, dlqID)
			require.GreaterOrEqual(t, num(t, s.tpl.Resources[dlqID].Properties["VisibilityTimeout"]), num(t, archiverFn.Properties["Timeout"]), "DLQ visibility must cover the archiver timeout")
		}
		require.ElementsMatch(t, dlqs, sources, "the archiver drains every DLQ")
		env := dig(archiverFn.Properties, "Environment", "Variables").(map[string]any)
		require.Equal(t, s.idOf(s.p.Alerts), refID(env[dlqarchiverfn.EnvAlertTopicARN]))
		got := actionsOn(s.statements(roleOf(t, archiverFn)))
		require.Equal(t, []string{"sns:Publish"}, got[s.idOf(s.p.Alerts)])
		require.Equal(t, []string{"dynamodb:GetItem", "dynamodb:PutItem"}, got[s.idOf(s.p.Tables[table.Incidents.Name])])
		require.Equal(t, []string{"dynamodb:ConditionCheckItem", "dynamodb:GetItem", "dynamodb:UpdateItem"}, got[s.idOf(s.p.Tables[table.Events.Name])],
			"the incident's put checks the dispatch row's erasure marker in its transaction")

		machines := s.tpl.ofType("AWS::StepFunctions::StateMachine")
		require.Len(t, machines, 1)
		for _, sm := range machines {
			p := sm.Properties
			require.Equal(t, true, dig(p, "TracingConfiguration", "Enabled"))
			require.Equal(t, "ALL", dig(p, "LoggingConfiguration", "Level"))
			require.Equal(t, false, dig(p, "LoggingConfiguration", "IncludeExecutionData"), "requests and outcomes stay out of the logs")
			def := resourceKey(p["DefinitionString"])
			replayID, _ := s.function(t, "replay")
			require.Contains(t, def, replayID)
			for _, action := range []string{operator.ActionSelect, operator.ActionReplayOne, operator.ActionSummarize} {
				require.Contains(t, def, `"action":"`+action+`"`)
			}
			require.Contains(t, def, `"Type":"Map"`)
			require.Contains(t, def, `"MaxConcurrency":10`)
			require.Contains(t, def, `"ItemsPath":"$.page.incidentIds"`)
		}
	})
}

// Outputs and /evp/<stage>/… parameters the operator CLI reads.
func TestStageDiscovery(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		params := map[string]bool{}
		for _, r := range s.tpl.ofType("AWS::SSM::Parameter") {
			params[str(r.Properties["Name"])] = true
			require.Equal(t, "String", r.Properties["Type"])
		}
		for _, name := range []string{ParamRegion, ParamAPIURL, ParamWebhookStripeURL, ParamAdminURL, ParamIngestFunction, ParamReplayFunction,
			ParamStateMachine, ParamEventsTable, ParamIncidentsTable, ParamPurgeTable, ParamBucket, ParamQueueURLs, ParamDLQURLs,
			ParamAlertsTopic, ParamAdminKeySecret, ParamStripeSecret, ParamSubscriberSecret, ParamJobsTable, ParamStripeAPIKey} {
			require.True(t, params["/evp/"+s.p.Stage.Name+"/"+name], "parameter %s", name)
		}
		for _, out := range []string{"ApiUrl", "WebhookStripeUrl", "IngestFunction", "ReplayStateMachine", "EventsTable", "IncidentsTable", "AlertsTopic"} {
			require.Contains(t, s.tpl.Outputs, out)
		}
	})
}

// The cost model (docs/cost.md) prices Lambda at each function's deployed
// memory: its table must match the stack's.
func TestCostModelKnowsEachFunctionsMemory(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		for name, f := range s.p.Functions {
			_, fn := s.function(t, name)
			require.EqualValues(t, costmodel.MemoryMB[f.Spec.Binary], num(t, fn.Properties["MemorySize"]), "%s (%s)", name, f.Spec.Binary)
		}
	})
}
