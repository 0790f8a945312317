package devstack

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/ingestfn"
)

func init() { register(ingestfn.Name, ingestFunction) }

// IngestResources are the ingest settings that come from the local
// resources; every other setting (claim-check threshold, lease, …) is read
// from the stack's settings under the name its Lambda reads.
func (s *Stack) IngestResources() (map[string]string, error) {
	queues, err := json.Marshal(s.Resources.QueueURLs())
	if err != nil {
		return nil, err
	}
	return map[string]string{
		wire.EnvEventsTable: s.Resources.EventsTable,
		wire.EnvBucket:      s.Resources.Bucket,
		wire.EnvQueueURLs:   string(queues),
	}, nil
}

func ingestFunction(_ context.Context, s *Stack) ([]Function, error) {
	res, err := s.IngestResources()
	if err != nil {
		return nil, err
	}
	cfg, err := ingestfn.Load(s.env(res), s.Topology)
	if err != nil {
		return nil, fmt.Errorf("ingest config: %w", err)
	}
	svc, err := ingestfn.New(cfg, s.Clients.Data(), s.runtime(ingestfn.Name))
	if err != nil {
		return nil, err
	}
	return []Function{{Name: ingestfn.Name, Handler: svc.Handle, Timeout: ingestfn.FunctionTimeout}}, nil
}
