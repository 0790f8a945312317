package purgeapifn

import (
	"context"

	"github.com/siteswarm/eventplatform/internal/wire"
)

// Function is purge-api's descriptor: private (no route); the stage's
// purge producers invoke it by ARN.
var Function = wire.Function{
	Name:        Name,
	Binary:      Name,
	ID:          "PurgeApi",
	Description: "Cache purge API (private): validate, coalesce and queue tenant-scoped tag purges",
	MemoryMB:    256,
	Timeout:     FunctionTimeout,
	Services:    []string{"dynamodb", "lambda"},
	Wiring: wire.Wire(wire.IgnoreTopology(Load), NewClients, func(_ context.Context, c Config, cl Clients, rt wire.Runtime) (any, error) {
		f, err := New(c, cl, rt)
		if err != nil {
			return nil, err
		}
		return f.Handle, nil
	}),
}
