package platform

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/replay"
)

// historyQuota is Step Functions' limit of events in one Standard
// execution's history.
const historyQuota = 25000

type sfnState struct {
	Type          string         `json:"Type"`
	Next          string         `json:"Next"`
	End           bool           `json:"End"`
	Parameters    map[string]any `json:"Parameters"`
	Retry         []sfnRetry     `json:"Retry"`
	ItemProcessor *sfnDefinition `json:"ItemProcessor"`
	Iterator      *sfnDefinition `json:"Iterator"`
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

// The replay state machine's worst-case history — every Lambda task
// retried to its limit, a request selecting replay.MaxLimit incidents —
// computed from the synthesized definition, stays under Step Functions'
// 25,000-event quota (bulk replay at outage scale must not fail midway).
func TestReplayHistoryFitsTheQuota(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		for _, sm := range s.tpl.ofType("AWS::StepFunctions::StateMachine") {
			var def sfnDefinition
			require.NoError(t, json.Unmarshal([]byte(s.resolve(t, sm.Properties["DefinitionString"])), &def))
			pageSize := 0
			for _, st := range def.States {
				if v, ok := st.Parameters["pageSize"].(float64); ok {
					pageSize = int(v)
				}
			}
			perPage, fixed := 0, 2 // ExecutionStarted, ExecutionSucceeded
			for name, st := range def.States {
				switch {
				case name == def.StartAt, st.Type == "Succeed", st.Type == "Fail":
					fixed += 2 // the entry pass and the end run once
				case st.Type == "Task":
					perPage += worstTask(st)
				case st.Type == "Map":
					items := st.ItemProcessor
					if items == nil {
						items = st.Iterator
					}
					require.NotNil(t, items, name)
					perPage += 4 // entered, started, succeeded, exited
					perPage += pageSize * worstIteration(items)
				default:
					perPage += 2
				}
			}
			require.Positive(t, pageSize, "the select task names its page size")
			pages := (replay.MaxLimit + pageSize - 1) / pageSize
			worst := fixed + pages*perPage
			t.Logf("worst case: %d pages × %d events + %d = %d history events (quota %d)", pages, perPage, fixed, worst, historyQuota)
			require.LessOrEqual(t, worst, historyQuota, "a bulk replay of %d incidents could exceed the history quota", replay.MaxLimit)
		}
	})
}
