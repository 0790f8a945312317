package platform

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/ssmparam"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook/providers"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	"github.com/siteswarm/eventplatform/internal/wire/adminfn"
	"github.com/siteswarm/eventplatform/internal/wire/dlqarchiverfn"
	"github.com/siteswarm/eventplatform/internal/wire/ingestfn"
	"github.com/siteswarm/eventplatform/internal/wire/jobsfn"
	"github.com/siteswarm/eventplatform/internal/wire/jobsworkerfn"
	"github.com/siteswarm/eventplatform/internal/wire/purgeapifn"
	"github.com/siteswarm/eventplatform/internal/wire/purgeconsumerfn"
	"github.com/siteswarm/eventplatform/internal/wire/replayfn"
	"github.com/siteswarm/eventplatform/internal/wire/sweeperfn"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

// One source for every function's timeout: the deployed function gets the
// timeout its wiring package declares, which is also what the local stack
// runs it with (ingest was 15 s deployed and 10 s locally).
func TestFunctionTimeoutsHaveOneSource(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		for name, want := range map[string]time.Duration{
			"ingest": ingestfn.FunctionTimeout, "webhook-stripe": webhookfn.FunctionTimeout, "admin-api": adminfn.FunctionTimeout,
			"sweeper": sweeperfn.FunctionTimeout, "dlq-archiver": dlqarchiverfn.FunctionTimeout, "replay": replayfn.FunctionTimeout,
			purgeapifn.Name: purgeapifn.FunctionTimeout, jobsworkerfn.WorkerName: jobsworkerfn.WorkerTimeout, jobsfn.SweepName: jobsfn.SweepTimeout,
		} {
			_, fn := s.function(t, name)
			require.Equal(t, want.Seconds(), num(t, fn.Properties["Timeout"]), name)
		}
		for topic := range s.p.Consumers {
			tp, _ := s.p.Topology.Topic(topic)
			_, fn := s.function(t, "consumer-"+slug(topic))
			require.Equal(t, tp.ConsumerTimeout.Seconds(), num(t, fn.Properties["Timeout"]), topic)
		}
	})
}

// Every queue feeding a Lambda event source keeps a message invisible for
// at least six times the function's timeout plus the mapping's batching
// window (AWS's guidance), read from the template itself: mapping → queue
// (EventSourceArn) and function (FunctionName).
func TestEventSourceVisibility(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		checked := 0
		for id, m := range s.tpl.ofType("AWS::Lambda::EventSourceMapping") {
			queue, ok := s.tpl.Resources[refID(m.Properties["EventSourceArn"])]
			require.True(t, ok, "%s: event source is a queue of the stack", id)
			require.Equal(t, "AWS::SQS::Queue", queue.Type, id)
			fn := s.tpl.Resources[refID(m.Properties["FunctionName"])]
			require.Equal(t, "AWS::Lambda::Function", fn.Type, id)
			window := 0.0
			if w, ok := m.Properties["MaximumBatchingWindowInSeconds"]; ok {
				window = num(t, w)
			}
			timeout := num(t, fn.Properties["Timeout"])
			require.GreaterOrEqual(t, num(t, queue.Properties["VisibilityTimeout"]), 6*timeout+window,
				"%s: visibility of %s ≥ 6 × %s's timeout (%v s) + batching window (%v s)", id, str(queue.Properties["QueueName"]), str(fn.Properties["FunctionName"]), timeout, window)
			checked++
		}
		require.GreaterOrEqual(t, checked, len(s.p.Consumers)+len(s.p.Topology.Topics)+1, "every consumer, every DLQ (archiver) and the jobs queue")
	})
}

// The replay state machine retries only errors a later attempt can fix,
// named as Step Functions names them: Lambda.* service errors on Lambda
// tasks, Sfn.* throttles and service failures on the SDK integration.
// Never States.TaskFailed or States.ALL (they include
// ExecutionAlreadyExists, access denied and bad input), never the
// misspelled "SFN." prefix (which matches nothing).
func TestReplayRetriesOnlyWhatCanSucceed(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		for _, sm := range s.tpl.ofType("AWS::StepFunctions::StateMachine") {
			var def sfnDefinition
			require.NoError(t, json.Unmarshal([]byte(s.resolve(t, sm.Properties["DefinitionString"])), &def))
			tasks := 0
			var walk func(d *sfnDefinition)
			walk = func(d *sfnDefinition) {
				for name, st := range d.States {
					for _, sub := range []*sfnDefinition{st.ItemProcessor, st.Iterator} {
						if sub != nil {
							walk(sub)
						}
					}
					if st.Type != "Task" {
						continue
					}
					tasks++
					require.NotEmpty(t, st.Retry, "%s retries its service's transient errors", name)
					allowed := lambdaRetryableErrors
					if strings.Contains(st.Resource, ":aws-sdk:sfn:") {
						allowed = sfnRetryableErrors
					}
					for _, r := range st.Retry {
						for _, e := range r.ErrorEquals {
							require.Contains(t, allowed, e, "%s (%s) retries %s", name, st.Resource, e)
						}
					}
				}
			}
			walk(&def)
			require.GreaterOrEqual(t, tasks, 3, "select, replay-one, summarize and the hand-over are tasks")
		}
	})
}

// Lambda caps a function's whole environment at 4 KB. Every function of
// every stage stays under it — the 1,000-account stage too — counting each
// unresolved token (a queue URL, an ARN) at 128 characters.
func TestEnvironmentFitsLambdaLimit(t *testing.T) {
	t.Parallel()
	for _, s := range []*synth{prod, dev, big} {
		for _, fn := range s.tpl.ofType("AWS::Lambda::Function") {
			vars, _ := dig(fn.Properties, "Environment", "Variables").(map[string]any)
			size := 0
			for k, v := range vars {
				size += len(k) + tokenLength(v)
			}
			require.Less(t, size, 4096, "%s %s: environment of ~%d bytes", s.p.Stage.Name, str(fn.Properties["FunctionName"]), size)
		}
	}
}

// tokenLength estimates a value's length once CloudFormation resolves it.
func tokenLength(v any) int {
	switch t := v.(type) {
	case string:
		return len(t)
	case map[string]any:
		if j, ok := t["Fn::Join"].([]any); ok {
			n := 0
			for _, part := range j[1].([]any) {
				n += tokenLength(part)
			}
			return n
		}
		return 128
	default:
		return 128
	}
}

// The stage maps that outgrow an environment variable (Connect account →
// tenant, tenant → zone) are SSM parameters of at most 4 KB under
// /evp/<stage>/config/<name>: together exactly the stage's map; each
// function reading one has its path, a version that changes with the map,
// and GetParametersByPath on that path only.
func TestStageMapsLiveInSSM(t *testing.T) {
	t.Parallel()
	for _, s := range []*synth{prod, dev, big} {
		stageMaps := map[string]map[string]string{
			ConfigStripeAccountTenants: s.p.Stage.StripeAccountTenants,
			ConfigPurgeZones:           s.p.Stage.PurgeZones,
		}
		readers := map[string][2]string{
			ConfigStripeAccountTenants: {webhookfn.EnvAccountTenantsPath, webhookfn.EnvAccountTenantsVersion},
			ConfigPurgeZones:           {purgeconsumerfn.EnvZonesPath, purgeconsumerfn.EnvZonesVersion},
		}
		// Every other provider's accounts (webhookTenants), read by its
		// function only.
		for _, d := range providers.All() {
			if d.Name != stripe.Source {
				v := webhookfn.VarsOf(d)
				stageMaps[webhookfn.AccountTenants(d)] = s.p.Stage.Tenants(d.Name).Accounts
				readers[webhookfn.AccountTenants(d)] = [2]string{v.AccountTenantsPath, v.AccountTenantsVersion}
			}
		}
		for name, want := range stageMaps {
			path := s.p.Stage.ParamPrefix() + "/config/" + name
			got := map[string]string{}
			parts := 0
			for _, prm := range s.tpl.ofType("AWS::SSM::Parameter") {
				if !strings.HasPrefix(str(prm.Properties["Name"]), path+"/") {
					continue
				}
				parts++
				v := str(prm.Properties["Value"])
				require.LessOrEqual(t, len(v), ssmparam.MaxValueBytes, "%s %s", s.p.Stage.Name, prm.Properties["Name"])
				var part map[string]string
				require.NoError(t, json.Unmarshal([]byte(v), &part))
				for k, x := range part {
					got[k] = x
				}
			}
			if len(want) == 0 {
				require.Zero(t, parts, "%s %s: no map, no parameter", s.p.Stage.Name, name)
				continue
			}
			require.Equal(t, want, got, "%s %s", s.p.Stage.Name, name)
			readers := readers[name]
			found := 0
			for _, fn := range s.tpl.ofType("AWS::Lambda::Function") {
				vars, _ := dig(fn.Properties, "Environment", "Variables").(map[string]any)
				if vars[readers[0]] == nil {
					continue
				}
				found++
				require.Equal(t, path, vars[readers[0]])
				require.Equal(t, ssmparam.Version(want), vars[readers[1]])
			}
			require.Positive(t, found, "%s %s has readers", s.p.Stage.Name, name)
			switch name {
			case ConfigStripeAccountTenants:
				require.Equal(t, 2, found, "the webhook and the jobs worker read the account map")
			case ConfigPurgeZones:
			default:
				require.Equal(t, 1, found, "%s: its webhook function reads it", name)
			}
		}
	}
	require.Greater(t, len(big.tpl.ofType("AWS::SSM::Parameter")), len(dev.tpl.ofType("AWS::SSM::Parameter"))+10, "1,000 accounts take ten parameters, 300 zones a few more")
}

// A production stage is pinned to its account and region: the synthesized
// stack carries the stage's environment, so a deploy with credentials for
// another account or region fails instead of creating a second production
// (finding 9). A development stage without them stays environment-agnostic.
func TestProductionStackIsPinnedToItsEnvironment(t *testing.T) {
	t.Parallel()
	require.True(t, prod.p.Stage.Production)
	// jsii is not safe for concurrent calls (the other tests take jsiiMu too).
	jsiiMu.Lock()
	account, region, env, devEnv := *prod.p.Stack.Account(), *prod.p.Stack.Region(), *prod.p.Stack.Environment(), *dev.p.Stack.Environment()
	jsiiMu.Unlock()
	require.Equal(t, "123456789012", account, "the example stage's account")
	require.Equal(t, "eu-west-1", region, "the example stage's region")
	require.Equal(t, "aws://123456789012/eu-west-1", env)
	require.Empty(t, dev.p.Stage.Account)
	require.Equal(t, "aws://unknown-account/unknown-region", devEnv)
}

// The committed production example is complete: it loads and every topic of
// the topology has what a production stage needs. A production stage
// without it (cdk.json's prod alone, say) is refused with the file to copy
// (finding 2).
func TestProductionExampleStageIsComplete(t *testing.T) {
	t.Parallel()
	base, err := cdkContext("../../../cdk.json")
	require.NoError(t, err)
	example, err := LoadStage(lookup(base, map[string]any{CtxStage: "prod", CtxStageFile: "../stages/prod.example.json"}))
	require.NoError(t, err)
	require.NoError(t, example.CheckTopology(topology.Default()))

	bare, err := LoadStage(lookup(base, map[string]any{CtxStage: "prod", "account": "123456789012", "region": "eu-west-1", "alarmEmail": "ops@example.com"}))
	require.NoError(t, err, "alarms and pinning given, the stage loads")
	err = bare.CheckTopology(topology.Default())
	require.Error(t, err)
	for _, want := range []string{"set the subscriber URL of billing.events", "set the subscriber URL of crm.sync", "Cloudflare zones", ExampleStageFile} {
		require.Contains(t, err.Error(), want)
	}
}
