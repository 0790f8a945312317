package jobsfn

import (
	"context"
	"time"

	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/wire"
)

// The sweep's schedules.
const (
	// SweepEvery is how often the job sweep rediscovers due jobs (spec
	// 003: every 15 minutes; wakes do the rest); SettingLocalSweepEvery
	// sets it in the local stack (DefaultLocalSweepEvery, so a lost wake
	// is seen quickly).
	SweepEvery             = 15 * time.Minute
	SettingLocalSweepEvery = "JOBS_SWEEP_EVERY"
	DefaultLocalSweepEvery = 30 * time.Second
	// ReconcileTenant is the tenant the daily Stripe reconciliation runs
	// as (the events it publishes carry their own tenants).
	ReconcileTenant = "platform"
)

// SweepFunction is jobs-sweep's descriptor: the job engine's schedule
// target. It only wakes (jobs-worker runs the steps) and starts the daily
// jobs: the Stripe reconciliation (as tenant ReconcileTenant) and a
// retention expiry for every tenant with a retention policy.
var SweepFunction = wire.Function{
	Name:        SweepName,
	Binary:      SweepName,
	ID:          "JobsSweep",
	Description: "Durable jobs: wakes due jobs and jobs whose lease expired; starts the daily Stripe reconciliation and retention expiries",
	MemoryMB:    256,
	Timeout:     SweepTimeout,
	Services:    []string{"dynamodb", "sqs", "s3"},
	Schedules: []wire.Schedule{
		{
			ID: "JobsSweepSchedule", Rule: "jobs-sweep", Description: "Wakes due durable jobs every " + SweepEvery.String(),
			Every: SweepEvery, Input: map[string]any{"action": "sweep"},
			RetryAttempts: 0, // the next run covers a missed one
			MaxEventAge:   SweepEvery,
			Local:         &wire.LocalCadence{Setting: SettingLocalSweepEvery, Default: DefaultLocalSweepEvery},
		},
		{
			ID: "StripeReconcileSchedule", Rule: "stripe-reconcile", Description: "Starts the day's Stripe reconciliation (idempotent per UTC date)",
			Daily: &wire.TimeOfDay{Hour: 3, Minute: 17},
			Input: map[string]any{"action": "daily", "kind": jobkinds.KindReconcile, "tenantId": ReconcileTenant},
			// The date is the key: a retry is the same job.
			RetryAttempts: 2, MaxEventAge: time.Hour,
		},
		{
			// No tenant: one job per tenant with a retention policy
			// (jobs.Kind.DailyTenants), each keyed by the date.
			ID: "RetentionExpirySchedule", Rule: "retention-expiry",
			Description: "Starts the day's retention expiry for every tenant with a retention policy (idempotent per tenant and UTC date)",
			Daily:       &wire.TimeOfDay{Hour: 3, Minute: 47},
			Input:       map[string]any{"action": "daily", "kind": jobkinds.KindRetention},
			// Each tenant's start is keyed by the date: a retry starts
			// only those that failed.
			RetryAttempts: 2, MaxEventAge: time.Hour,
		},
	},
	Wiring: wire.Wire(wire.IgnoreTopology(LoadSweep), NewClients, func(_ context.Context, c Config, cl Clients, rt wire.Runtime) (any, error) {
		e, err := NewSweep(c, cl, rt)
		if err != nil {
			return nil, err
		}
		return e.HandleSchedule, nil
	}),
}
