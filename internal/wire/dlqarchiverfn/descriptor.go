package dlqarchiverfn

import (
	"context"

	"github.com/siteswarm/eventplatform/internal/wire"
)

// BatchSize is the dead letters per invocation (each one is a few writes;
// a small batch keeps a failing one from delaying many).
const BatchSize = 10

// Function is dlq-archiver's descriptor: an event source mapping on every
// topic's DLQ.
var Function = wire.Function{
	Name:        Name,
	Binary:      Name,
	ID:          "DlqArchiver",
	Description: "Drains every topic DLQ into incidents (bodies over 64 KiB to S3) and alerts",
	MemoryMB:    256,
	Timeout:     FunctionTimeout,
	Services:    []string{"dynamodb", "s3", "sns"},
	Queues:      []wire.QueueSource{{Queue: wire.QueueTopicDLQs, BatchSize: BatchSize, ReportFailures: true}},
	Wiring: wire.Wire(Load, NewClients, func(_ context.Context, c Config, cl Clients, rt wire.Runtime) (any, error) {
		a, err := New(c, cl, rt)
		if err != nil {
			return nil, err
		}
		return a.Handle, nil
	}),
}
