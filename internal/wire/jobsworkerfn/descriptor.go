package jobsworkerfn

import (
	"context"

	"github.com/siteswarm/eventplatform/internal/wire"
)

// Function is jobs-worker's descriptor: the jobs queue's consumer, one
// wake (one leased step) per invocation, at most WorkerMaxConcurrency at
// once.
var Function = wire.Function{
	Name:        WorkerName,
	Binary:      WorkerName,
	ID:          "JobsWorker",
	Description: "Durable jobs: runs one leased, bounded step per wake (tenant export, subject erasure, Stripe reconciliation)",
	MemoryMB:    512,
	Timeout:     WorkerTimeout,
	Services:    []string{"dynamodb", "sqs", "s3", "lambda", "secretsmanager", "ssm"},
	Queues:      []wire.QueueSource{{Queue: wire.QueueJobs, BatchSize: 1, MaxConcurrency: WorkerMaxConcurrency, ReportFailures: true}},
	Wiring: wire.Wire(Load, NewClients, func(ctx context.Context, c Config, cl Clients, rt wire.Runtime) (any, error) {
		e, err := New(ctx, c, cl, rt)
		if err != nil {
			return nil, err
		}
		return e.HandleSQS, nil
	}),
}
