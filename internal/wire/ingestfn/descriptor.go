package ingestfn

import (
	"context"

	"github.com/siteswarm/eventplatform/internal/wire"
)

// Function is the ingest function's descriptor: private (no route, no
// URL); producers invoke it by ARN.
var Function = wire.Function{
	Name:        Name,
	Binary:      Name,
	ID:          "Ingest",
	Description: "Private ingestion: validate, dedupe, commit ledger + outbox, fan out to topic queues",
	MemoryMB:    512,
	Timeout:     FunctionTimeout,
	Services:    []string{"dynamodb", "sqs", "s3"},
	// The enqueued marks are written after the answer (ingestfn.Deps).
	AfterAnswer: true,
	Wiring: wire.Wire(Load, NewClients, func(_ context.Context, c Config, cl Clients, rt wire.Runtime) (any, error) {
		svc, err := New(c, cl, rt)
		if err != nil {
			return nil, err
		}
		return svc.Handle, nil
	}),
}
