package jobsworkerfn

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/jobs"
)

// The worker runs every registered kind with its handler: a kind added to
// jobkinds.Kinds and not given its deps here would have its jobs started
// everywhere and run nowhere, so the worker refuses to start.
func TestTheWorkerRunsEveryRegisteredKind(t *testing.T) {
	t.Parallel()
	run := func(k jobs.Kind) jobs.Kind { return k.With(jobs.HandlerFunc(nil)) }
	var all []jobs.Kind
	for _, k := range jobkinds.Kinds() {
		require.Nil(t, k.Handler, "%s: a registered kind is its description only", k.Name)
		all = append(all, run(k))
	}
	require.NoError(t, runsEveryKind(all))
	require.ErrorContains(t, runsEveryKind(all[1:]), jobkinds.KindExport, "a registered kind the worker does not run")
	require.ErrorContains(t, runsEveryKind(append(all[1:], jobkinds.ExportKind)), "has no handler")
	require.Error(t, runsEveryKind(append(all, run(jobs.Kind{Name: "stray"}))), "a kind nobody registered")
}
