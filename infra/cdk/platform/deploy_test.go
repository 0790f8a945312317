package platform

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/wire/adminfn"
	"github.com/siteswarm/eventplatform/internal/wire/dlqarchiverfn"
	"github.com/siteswarm/eventplatform/internal/wire/ingestfn"
	"github.com/siteswarm/eventplatform/internal/wire/jobsfn"
	"github.com/siteswarm/eventplatform/internal/wire/jobsworkerfn"
	"github.com/siteswarm/eventplatform/internal/wire/purgeapifn"
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
