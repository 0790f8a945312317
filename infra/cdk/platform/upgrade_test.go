package platform

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/table"
)

// CloudFormation creates or deletes one global secondary index per
// update: each incidentIndexStep must differ from the one before by one
// index, from the earlier indexes to the current ones.
func TestIncidentIndexUpgradeChangesOneIndexPerStep(t *testing.T) {
	t.Parallel()
	names := func(ixs []table.Index) map[string]string {
		out := map[string]string{}
		for _, ix := range ixs {
			out[ix.Name] = fmt.Sprintf("%v %v", ix.PK, ix.SK)
		}
		return out
	}
	prev := names(table.IncidentIndexesBefore)
	// The incident index upgrade, then the subject index upgrade.
	for _, step := range [][2]int{{1, 0}, {2, 0}, {3, 0}, {0, 1}, {0, 2}, {0, 0}} {
		cur := names(incidentIndexes(step[0], step[1]))
		changes := 0
		for n, k := range prev {
			if cur[n] != k {
				changes++
			}
		}
		for n := range cur {
			if _, ok := prev[n]; !ok {
				changes++
			}
		}
		require.Equal(t, 1, changes, "step %d changes %v → %v", step, prev, cur)
		prev = cur
	}
	require.Equal(t, names(table.Incidents.Indexes), prev, "the last step is the current definition")
}

// The events table gains its subject identifier indexes one per update
// (subjectIndexStep 1, 2, then unset), from the layout before them.
func TestSubjectIndexUpgradeChangesOneIndexPerStep(t *testing.T) {
	t.Parallel()
	count := func(ixs []table.Index) int { return len(ixs) }
	before := subjectIndexes(table.Events.Indexes, 1)
	require.Equal(t, len(table.Events.Indexes)-2, count(before), "step 1 is the layout before")
	require.Equal(t, count(before)+1, count(subjectIndexes(table.Events.Indexes, 2)))
	require.Equal(t, table.Events.Indexes, subjectIndexes(table.Events.Indexes, 0), "done: the current definition")
}

// A stage deployed before the tenant-shard index gains it in one update
// (one index added, none changed or dropped), in any subject index step:
// the legacy tenant index stays, read by listings until it empties
// (docs/deploy.md#upgrading).
func TestTenantShardIndexUpgradeIsOneIndex(t *testing.T) {
	t.Parallel()
	keys := func(ixs []table.Index) map[string]string {
		out := map[string]string{}
		for _, ix := range ixs {
			out[ix.Name] = fmt.Sprintf("%v %v %v %v", ix.PK, ix.SK, ix.Projection, ix.NonKey)
		}
		return out
	}
	for _, step := range []int{0, 1, 2} {
		before, now := keys(subjectIndexes(table.EventsIndexesBefore, step)), keys(subjectIndexes(table.Events.Indexes, step))
		require.Len(t, now, len(before)+1, "step %d", step)
		for name, k := range before {
			require.Equal(t, k, now[name], "step %d: %s is unchanged", step, name)
		}
		require.Contains(t, now, table.IndexTenantShard)
		require.Contains(t, now, table.IndexTenant, "the legacy index stays")
	}
}

func TestIssueNineAlarmsAndRefusalState(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		alarms := map[string]bool{}
		for _, r := range s.tpl.ofType("AWS::CloudWatch::Alarm") {
			alarms[fmt.Sprint(r.Properties["AlarmName"])] = true
		}
		for _, name := range []string{"replays-stuck", "sweep-partition-errors", "stripe-unknown-account"} {
			require.True(t, alarms[s.p.Stage.Prefix()+"-"+name], name)
		}
		for _, r := range s.tpl.ofType("AWS::StepFunctions::StateMachine") {
			def := fmt.Sprint(r.Properties["DefinitionString"])
			require.True(t, strings.Contains(def, "Request refused"), "a refused request fails the execution with its code")
			require.True(t, strings.Contains(def, "$$.Execution.Id"), "replay-one carries the execution id as its request token")
		}
		_, hook := s.function(t, "webhook-stripe")
		env := hook.Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
		require.Equal(t, s.p.Stage.Prefix(), env["STAGE_NAME"], "webhook metrics carry the stage")
	})
}
