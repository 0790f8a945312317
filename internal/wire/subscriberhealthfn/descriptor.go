package subscriberhealthfn

import (
	"context"

	"github.com/siteswarm/eventplatform/internal/subscriberhealth"
	"github.com/siteswarm/eventplatform/internal/wire"
)

// Function is subscriber-health's descriptor: a rule every
// health.DefaultPeriod (locally HEALTH_PERIOD, the period the function
// itself reads), and asynchronous notices from the consumers and
// admin-api.
var Function = wire.Function{
	Name:        Name,
	Binary:      Name,
	ID:          "SubscriberHealth",
	Description: "Subscriber health: probes, closes and escalates topic breakers; applies them to the consumers' event source mappings",
	MemoryMB:    128,
	Timeout:     FunctionTimeout,
	Services:    []string{"dynamodb", "sqs", "lambda", "sns"},
	Schedules: []wire.Schedule{{
		ID: "SubscriberHealthSchedule", Rule: "subscriber-health",
		Description: "Runs the subscriber-health monitor every minute (a run waits for probes due before the next)",
		Every:       subscriberhealth.DefaultPeriod,
		// A missed run is covered by the next one a minute later.
		RetryAttempts: 0, MaxEventAge: subscriberhealth.DefaultPeriod,
		Local: &wire.LocalCadence{Setting: EnvPeriod, Default: subscriberhealth.DefaultPeriod},
	}},
	Wiring: wire.Wire(Load, NewClients, func(_ context.Context, c Config, cl Clients, rt wire.Runtime) (any, error) {
		m, err := New(c, cl, rt)
		if err != nil {
			return nil, err
		}
		return m.Handle, nil
	}),
}
