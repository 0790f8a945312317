package jobsworkerfn_test

import (
	"maps"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/jobsworkerfn"
)

func env(set map[string]string) *envconf.Reader {
	m := map[string]string{
		wire.EnvJobsTable: "jobs", wire.EnvIncidentsTable: "incidents", wire.EnvBucket: "bucket",
		wire.EnvEventsTable: "events", wire.EnvIngestFunction: "ingest",
	}
	maps.Copy(m, set)
	return envconf.FromMap(m)
}

// The file import's tuning: unset takes the kind's defaults (zero here),
// a value in range is taken, and one out of range is refused naming its
// variable (a batch call takes at most 100 envelopes).
func TestImportSettings(t *testing.T) {
	t.Parallel()
	c, err := jobsworkerfn.Load(env(nil), topology.Default())
	require.NoError(t, err)
	require.Zero(t, c.Import.Concurrency)
	require.Zero(t, c.Import.InvokeRecords)
	require.Zero(t, c.Import.StepRecords)

	c, err = jobsworkerfn.Load(env(map[string]string{
		jobsworkerfn.EnvImportConcurrency: "8", jobsworkerfn.EnvImportInvokeRecords: "100", jobsworkerfn.EnvImportStepRecords: "5000",
	}), topology.Default())
	require.NoError(t, err)
	require.Equal(t, 8, c.Import.Concurrency)
	require.Equal(t, 100, c.Import.InvokeRecords)
	require.Equal(t, 5000, c.Import.StepRecords)

	for name, tc := range map[string]struct{ key, value string }{
		"concurrency above 128":    {jobsworkerfn.EnvImportConcurrency, "129"},
		"negative concurrency":     {jobsworkerfn.EnvImportConcurrency, "-1"},
		"invoke records above 100": {jobsworkerfn.EnvImportInvokeRecords, "101"},
		"step records above 1M":    {jobsworkerfn.EnvImportStepRecords, "1000001"},
		"not a number":             {jobsworkerfn.EnvImportInvokeRecords, "many"},
	} {
		_, err := jobsworkerfn.Load(env(map[string]string{tc.key: tc.value}), topology.Default())
		require.ErrorContains(t, err, tc.key, name)
	}
}
