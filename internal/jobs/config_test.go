package jobs_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// A job outlives every dead letter that may consult it: the DLQ archiver
// reads a subject's erasure job to decide whether a dead letter older than
// its ledger item may open an incident, and dead letters wait in their
// DLQs for topology.QueueRetention. A shorter retention is refused at
// start, not discovered as an incident the erasure missed.
func TestRetentionOutlivesTheDeadLetters(t *testing.T) {
	t.Parallel()
	require.GreaterOrEqual(t, jobs.MinRetention, topology.QueueRetention)
	require.NoError(t, jobs.Config{}.WithDefaults().Validate())
	require.NoError(t, jobs.Config{Retention: jobs.MinRetention}.WithDefaults().Validate())
	err := jobs.Config{Retention: 24 * time.Hour}.WithDefaults().Validate()
	require.ErrorContains(t, err, "retention 24h0m0s must be 14d..365d")
}
