package dynamo_test

import (
	"testing"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/consume/consumetest"
	"github.com/siteswarm/eventplatform/internal/incident/incidenttest"
	"github.com/siteswarm/eventplatform/internal/ingest/ingesttest"
	"github.com/siteswarm/eventplatform/internal/local/localaws/localawstest"
	"github.com/siteswarm/eventplatform/internal/purge/purgetest"
	"github.com/siteswarm/eventplatform/internal/sweep/sweeptest"
)

// The DynamoDB adapter against every port contract, on every DynamoDB
// emulator the project keeps: the embedded one and AWS's DynamoDB Local.

// onEachEmulator runs a contract with environments on each emulator.
func onEachEmulator(t *testing.T, run func(t *testing.T, newEnv func(t *testing.T) *localawstest.Env)) {
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		run(t, func(t *testing.T) *localawstest.Env { return localawstest.NewEnv(t) })
	})
	t.Run("dynamodb-local", func(t *testing.T) {
		t.Parallel()
		emu := localawstest.SharedDynamoDBLocal(t)
		run(t, func(t *testing.T) *localawstest.Env { return localawstest.NewEnv(t, localawstest.WithEmulators(emu)) })
	})
}

func TestEventStoreContract(t *testing.T) {
	t.Parallel()
	onEachEmulator(t, func(t *testing.T, newEnv func(t *testing.T) *localawstest.Env) {
		ingesttest.Exercise(t, func(t *testing.T) ingesttest.Store { return newEnv(t).Events() })
	})
}

func TestConsumerRowsContract(t *testing.T) {
	t.Parallel()
	onEachEmulator(t, func(t *testing.T, newEnv func(t *testing.T) *localawstest.Env) {
		consumetest.Exercise(t, func(t *testing.T) consumetest.Store { return newEnv(t).Events() })
	})
}

func TestSweeperRowsContract(t *testing.T) {
	t.Parallel()
	onEachEmulator(t, func(t *testing.T, newEnv func(t *testing.T) *localawstest.Env) {
		sweeptest.Exercise(t, func(t *testing.T) sweeptest.Store { return newEnv(t).Events() })
	})
}

func TestIncidentStoreContract(t *testing.T) {
	t.Parallel()
	onEachEmulator(t, func(t *testing.T, newEnv func(t *testing.T) *localawstest.Env) {
		incidenttest.Exercise(t, func(t *testing.T) incidenttest.Store { return newEnv(t).Incidents() })
	})
}

func TestPurgeStoreContract(t *testing.T) {
	t.Parallel()
	onEachEmulator(t, func(t *testing.T, newEnv func(t *testing.T) *localawstest.Env) {
		purgetest.Exercise(t, func(t *testing.T) purgetest.Store {
			env := newEnv(t)
			return &dynamo.Purge{Client: env.DynamoDB, Table: env.Resources.PurgeTable}
		})
	})
}
