package dynamo_test

import (
	"testing"

	"github.com/siteswarm/eventplatform/internal/admin/admintest"
	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/consume/consumetest"
	"github.com/siteswarm/eventplatform/internal/health"
	"github.com/siteswarm/eventplatform/internal/health/healthtest"
	"github.com/siteswarm/eventplatform/internal/incident/incidenttest"
	"github.com/siteswarm/eventplatform/internal/ingest/ingesttest"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/jobs/jobstest"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/outboxsweep/outboxsweeptest"
	"github.com/siteswarm/eventplatform/internal/purge/purgetest"
)

// The DynamoDB adapter against every port contract, on every DynamoDB
// emulator the project keeps: the embedded one and AWS's DynamoDB Local.

// onEachEmulator runs a contract with environments on each emulator.
func onEachEmulator(t *testing.T, run func(t *testing.T, newEnv func(t *testing.T) *awslocaltest.Env)) {
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		run(t, func(t *testing.T) *awslocaltest.Env { return awslocaltest.NewEnv(t) })
	})
	t.Run("dynamodb-local", func(t *testing.T) {
		t.Parallel()
		emu := awslocaltest.SharedDynamoDBLocal(t)
		run(t, func(t *testing.T) *awslocaltest.Env { return awslocaltest.NewEnv(t, awslocaltest.WithEmulators(emu)) })
	})
}

func TestEventStoreContract(t *testing.T) {
	t.Parallel()
	onEachEmulator(t, func(t *testing.T, newEnv func(t *testing.T) *awslocaltest.Env) {
		ingesttest.Exercise(t, func(t *testing.T) ingesttest.Store { return newEnv(t).Events() })
	})
}

func TestConsumerRowsContract(t *testing.T) {
	t.Parallel()
	onEachEmulator(t, func(t *testing.T, newEnv func(t *testing.T) *awslocaltest.Env) {
		consumetest.Exercise(t, func(t *testing.T) consumetest.Store { return newEnv(t).Events() })
	})
}

func TestSweeperRowsContract(t *testing.T) {
	t.Parallel()
	onEachEmulator(t, func(t *testing.T, newEnv func(t *testing.T) *awslocaltest.Env) {
		outboxsweeptest.Exercise(t, func(t *testing.T) outboxsweeptest.Store { return newEnv(t).Events() })
	})
}

func TestIncidentStoreContract(t *testing.T) {
	t.Parallel()
	onEachEmulator(t, func(t *testing.T, newEnv func(t *testing.T) *awslocaltest.Env) {
		incidenttest.Exercise(t, func(t *testing.T) incidenttest.Store { return newEnv(t).Incidents() })
	})
}

func TestAdminStoreContract(t *testing.T) {
	t.Parallel()
	onEachEmulator(t, func(t *testing.T, newEnv func(t *testing.T) *awslocaltest.Env) {
		admintest.Exercise(t, func(t *testing.T) admintest.Store {
			env := newEnv(t)
			return &dynamo.Admin{Client: env.DynamoDB, Table: env.Resources.AdminTable}
		})
	})
}

func TestPurgeStoreContract(t *testing.T) {
	t.Parallel()
	onEachEmulator(t, func(t *testing.T, newEnv func(t *testing.T) *awslocaltest.Env) {
		purgetest.Exercise(t, func(t *testing.T) purgetest.Store {
			env := newEnv(t)
			return &dynamo.Purge{Client: env.DynamoDB, Table: env.Resources.PurgeTable}
		})
	})
}

func TestBreakerStoreContract(t *testing.T) {
	t.Parallel()
	onEachEmulator(t, func(t *testing.T, newEnv func(t *testing.T) *awslocaltest.Env) {
		healthtest.Exercise(t, func(t *testing.T) health.Store {
			env := newEnv(t)
			return &dynamo.Breakers{Client: env.DynamoDB, Table: env.Resources.EventsTable}
		})
	})
}

func TestJobStoreContract(t *testing.T) {
	t.Parallel()
	onEachEmulator(t, func(t *testing.T, newEnv func(t *testing.T) *awslocaltest.Env) {
		jobstest.Exercise(t, func(t *testing.T) jobs.Store {
			env := newEnv(t)
			return &dynamo.Jobs{Client: env.DynamoDB, Table: env.Resources.JobsTable}
		})
	})
}
