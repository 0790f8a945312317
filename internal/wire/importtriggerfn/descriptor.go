package importtriggerfn

import (
	"context"

	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/jobsfn"
)

// Function is import-trigger's descriptor: the imports queue's consumer
// (the bucket's notifications for imports/, topology.BucketNotifications).
var Function = wire.Function{
	Name:        Name,
	Binary:      Name,
	ID:          "ImportTrigger",
	Description: "File imports: starts a file-import job for each file created under imports/<tenant>/ (S3 event notifications)",
	MemoryMB:    256,
	Timeout:     Timeout,
	Services:    []string{"dynamodb", "sqs", "s3"},
	Queues:      []wire.QueueSource{{Queue: wire.QueueImports, BatchSize: BatchSize, ReportFailures: true}},
	Wiring: wire.Wire(wire.IgnoreTopology(Load), jobsfn.NewClients, func(_ context.Context, c Config, cl jobsfn.Clients, rt wire.Runtime) (any, error) {
		h, err := New(c, cl, rt)
		if err != nil {
			return nil, err
		}
		return h.HandleSQS, nil
	}),
}
