package dynamo_test

import (
	"testing"

	"github.com/siteswarm/eventplatform/internal/consume/consumetest"
	"github.com/siteswarm/eventplatform/internal/dynamo"
	"github.com/siteswarm/eventplatform/internal/incident/incidenttest"
	"github.com/siteswarm/eventplatform/internal/ingest/ingesttest"
	"github.com/siteswarm/eventplatform/internal/localaws/localawstest"
	"github.com/siteswarm/eventplatform/internal/purge/purgetest"
	"github.com/siteswarm/eventplatform/internal/sweep/sweeptest"
)

// The DynamoDB adapter against every port contract, on the emulators.

func newEvents(t *testing.T) *dynamo.Events {
	env := localawstest.NewEnv(t)
	return env.Events()
}

func TestEventStoreContract(t *testing.T) {
	t.Parallel()
	ingesttest.Exercise(t, func(t *testing.T) ingesttest.Store { return newEvents(t) })
}

func TestConsumerRowsContract(t *testing.T) {
	t.Parallel()
	consumetest.Exercise(t, func(t *testing.T) consumetest.Store { return newEvents(t) })
}

func TestSweeperRowsContract(t *testing.T) {
	t.Parallel()
	sweeptest.Exercise(t, func(t *testing.T) sweeptest.Store { return newEvents(t) })
}

func TestIncidentStoreContract(t *testing.T) {
	t.Parallel()
	incidenttest.Exercise(t, func(t *testing.T) incidenttest.Store {
		env := localawstest.NewEnv(t)
		return env.Incidents()
	})
}

func TestPurgeStoreContract(t *testing.T) {
	t.Parallel()
	purgetest.Exercise(t, func(t *testing.T) purgetest.Store {
		env := localawstest.NewEnv(t)
		return &dynamo.Purge{Client: env.DynamoDB, Table: env.Resources.PurgeTable}
	})
}
