package sweeperfn

import (
	"context"
	"time"

	"github.com/siteswarm/eventplatform/internal/wire"
)

// Every is the sweeper's schedule; SettingLocalEvery shortens it in the
// local stack (`evp dev --sweep-every`).
const (
	Every             = 2 * time.Minute
	SettingLocalEvery = "SWEEP_EVERY"
)

// Function is the outbox sweeper's descriptor: an EventBridge rule every
// Every (EventBridge's scheduled event as input).
var Function = wire.Function{
	Name:        Name,
	Binary:      Name,
	ID:          "Sweeper",
	Description: "Outbox sweeper: resend stranded dispatches, abandon exhausted ones to incidents",
	MemoryMB:    512,
	Timeout:     FunctionTimeout,
	Services:    []string{"dynamodb", "sqs", "s3"},
	Schedules: []wire.Schedule{{
		ID: "SweepSchedule",
		// "outbox-sweep", not "sweep": stage X-jobs would name its rule
		// evp-X-jobs-sweep, which is stage X's jobs sweep rule (make
		// validate).
		Rule:        "outbox-sweep",
		Description: "Runs the outbox sweeper every " + Every.String(),
		Every:       Every,
		// A missed run is covered by the next one two minutes later.
		RetryAttempts: 0,
		MaxEventAge:   Every,
		Local:         &wire.LocalCadence{Setting: SettingLocalEvery, Default: Every},
	}},
	Wiring: wire.Wire(Load, NewClients, func(_ context.Context, c Config, cl Clients, rt wire.Runtime) (any, error) {
		s, err := New(c, cl, rt)
		if err != nil {
			return nil, err
		}
		return s.Handle, nil
	}),
}
