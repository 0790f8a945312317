package platform

import (
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/replay"
)

// historyQuota is Step Functions' limit of events in one Standard
// execution's history.
const historyQuota = 25000

type sfnState struct {
	Type          string         `json:"Type"`
	Resource      string         `json:"Resource"`
	Next          string         `json:"Next"`
	End           bool           `json:"End"`
	Default       string         `json:"Default"`
	Choices       []sfnChoice    `json:"Choices"`
	Parameters    map[string]any `json:"Parameters"`
	Retry         []sfnRetry     `json:"Retry"`
	ItemProcessor *sfnDefinition `json:"ItemProcessor"`
	Iterator      *sfnDefinition `json:"Iterator"`
}

type sfnChoice struct {
	Variable                 string   `json:"Variable"`
	NumericGreaterThanEquals *float64 `json:"NumericGreaterThanEquals"`
	Next                     string   `json:"Next"`
}

// next lists the states a state can go to.
func (st sfnState) next() []string {
	out := []string{}
	if st.Next != "" {
		out = append(out, st.Next)
	}
	if st.Default != "" {
		out = append(out, st.Default)
	}
	for _, c := range st.Choices {
		out = append(out, c.Next)
	}
	return out
}

// reachable is every state reachable from the named one (itself included
// only through a cycle).
func (d *sfnDefinition) reachable(from string) map[string]bool {
	seen := map[string]bool{}
	todo := d.States[from].next()
	for len(todo) > 0 {
		n := todo[0]
		todo = todo[1:]
		if !seen[n] {
			seen[n] = true
			todo = append(todo, d.States[n].next()...)
		}
	}
	return seen
}

type sfnRetry struct {
	ErrorEquals []string `json:"ErrorEquals"`
	MaxAttempts *int     `json:"MaxAttempts"`
}

type sfnDefinition struct {
	StartAt string              `json:"StartAt"`
	States  map[string]sfnState `json:"States"`
}

// worstTask is a Task state's history at its worst: entered and exited,
// and three events (scheduled, started, failed/succeeded) per attempt,
// every retrier used up (an attempt fails with one error, so different
// errors can each use their own retrier's attempts).
func worstTask(st sfnState) int {
	attempts := 1
	for _, r := range st.Retry {
		n := 3 // Step Functions' default MaxAttempts
		if r.MaxAttempts != nil {
			n = *r.MaxAttempts
		}
		attempts += n
	}
	return 2 + 3*attempts
}

// worstIteration is one Map iteration's history at its worst.
func worstIteration(d *sfnDefinition) int {
	n := 2 // MapIterationStarted, MapIterationSucceeded
	for _, st := range d.States {
		switch st.Type {
		case "Task":
			n += worstTask(st)
		default:
			n += 2
		}
	}
	return n
}

// worst is a top-level state's history at its worst.
func worst(st sfnState, pageSize int) int {
	switch st.Type {
	case "Task":
		return worstTask(st)
	case "Map":
		items := st.ItemProcessor
		if items == nil {
			items = st.Iterator
		}
		return 4 + pageSize*worstIteration(items) // entered, started, succeeded, exited
	default:
		return 2
	}
}

// The replay state machine's worst-case history per execution — every
// Lambda task retried to its limit, every page full — computed from the
// synthesized definition, stays under Step Functions' 25,000-event quota:
// an execution replays a bounded number of pages and then continues as a
// new execution of the same state machine, so a bulk replay of
// replay.MaxBulkLimit incidents (an hour-long outage at a busy subscriber)
// never fails midway.
func TestReplayHistoryFitsTheQuota(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		for _, sm := range s.tpl.ofType("AWS::StepFunctions::StateMachine") {
			var def sfnDefinition
			require.NoError(t, json.Unmarshal([]byte(s.resolve(t, sm.Properties["DefinitionString"])), &def))
			selectState, pageSize := "", 0
			for name, st := range def.States {
				if v, ok := st.Parameters["pageSize"].(float64); ok {
					selectState, pageSize = name, int(v)
				}
			}
			require.Positive(t, pageSize, "the select task names its page size")
			// The page loop: every state on a cycle through the select task.
			loop := map[string]bool{}
			for name := range def.reachable(selectState) {
				if def.reachable(name)[selectState] {
					loop[name] = true
				}
			}
			// Pages per execution: the loop's budget choice on $.pages.
			pagesPerExecution := 0
			var handover string
			for name := range loop {
				for _, c := range def.States[name].Choices {
					if c.Variable == "$.pages" && c.NumericGreaterThanEquals != nil {
						pagesPerExecution, handover = int(*c.NumericGreaterThanEquals), c.Next
					}
				}
			}
			require.Positive(t, pagesPerExecution, "an execution bounds the pages it replays")
			// The hand-over path starts a new execution of this same
			// state machine.
			continues := false
			for name := range def.reachable(handover) {
				st := def.States[name]
				if st.Resource == "arn:aws:states:::aws-sdk:sfn:startExecution" {
					require.Equal(t, "arn:aws:states:eu-west-1:123456789012:stateMachine:"+str(sm.Properties["StateMachineName"]), st.Parameters["StateMachineArn"])
					require.Contains(t, st.Parameters, "Name.$", "a retried hand-over must find the execution it started")
					continues = true
				}
			}
			require.True(t, continues, "the hand-over starts the next execution")

			perPage, fixed := 0, 2 // ExecutionStarted, ExecutionSucceeded
			for name, st := range def.States {
				if loop[name] {
					perPage += worst(st, pageSize)
				} else {
					fixed += worst(st, pageSize) // each once at most (both starts and both ends counted)
				}
			}
			worstCase := fixed + pagesPerExecution*perPage
			executions := (replay.MaxBulkLimit + pagesPerExecution*pageSize - 1) / (pagesPerExecution * pageSize)
			t.Logf("worst case per execution: %d pages × %d events + %d = %d history events (quota %d); %d incidents take %d executions",
				pagesPerExecution, perPage, fixed, worstCase, historyQuota, replay.MaxBulkLimit, executions)
			require.LessOrEqual(t, worstCase, historyQuota, "an execution of %d pages could exceed the history quota", pagesPerExecution)
		}
	})
}

var updateGolden = flag.Bool("update", false, "rewrite golden files")

// replayDefinitionGolden is the dev stage's replay state machine definition
// as synthesized, resolved (ARNs of account 123456789012 in eu-west-1). The
// local stack embeds it and runs it behind its Step Functions endpoint
// (internal/local/stepfnlocal) against its replay function, so the definition a
// stage deploys is the one make dev and the tests run.
const replayDefinitionGolden = "../../../internal/local/devstack/statemachines/replay.asl.json"

// The committed definition the local stack runs is the one synthesized
// (go test ./platform -run TestReplayDefinitionGolden -update rewrites it).
func TestReplayDefinitionGolden(t *testing.T) {
	t.Parallel()
	sms := dev.tpl.ofType("AWS::StepFunctions::StateMachine")
	require.Len(t, sms, 1)
	var def any
	for _, sm := range sms {
		require.NoError(t, json.Unmarshal([]byte(dev.resolve(t, sm.Properties["DefinitionString"])), &def))
	}
	got, err := json.MarshalIndent(def, "", "  ")
	require.NoError(t, err)
	got = append(got, '\n')
	if *updateGolden {
		require.NoError(t, os.WriteFile(replayDefinitionGolden, got, 0o644))
	}
	want, err := os.ReadFile(replayDefinitionGolden)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "the replay state machine changed: go test ./platform -run TestReplayDefinitionGolden -update")
}
