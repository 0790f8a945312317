package replayfn

import (
	"context"

	"github.com/siteswarm/eventplatform/internal/wire"
)

// Function is the replay function's descriptor: the replay state machine's
// steps and the operator API the evp CLI invokes by name (no route).
var Function = wire.Function{
	Name:        Name,
	Binary:      Name,
	ID:          "Replay",
	Description: "Incident replay (Step Functions steps, CLI) and operator views",
	MemoryMB:    512,
	Timeout:     FunctionTimeout,
	Services:    []string{"dynamodb", "sqs", "s3"},
	Wiring: wire.Wire(Load, NewClients, func(_ context.Context, c Config, cl Clients, rt wire.Runtime) (any, error) {
		f, err := New(c, cl, rt)
		if err != nil {
			return nil, err
		}
		return f.Handle, nil
	}),
}
