package devstack

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/wire"
)

func init() { register("ingest", ingestFunction) }

// IngestSettings are the ingest settings that come from the local resources;
// the tunables (claim-check threshold, lease, …) may be overridden from the
// environment exactly as on Lambda.
func (s *Stack) IngestSettings() (map[string]string, error) {
	queues, err := json.Marshal(s.Resources.QueueURLs())
	if err != nil {
		return nil, err
	}
	settings := map[string]string{
		wire.EnvEventsTable: s.Resources.EventsTable,
		wire.EnvBucket:      s.Resources.Bucket,
		wire.EnvQueueURLs:   string(queues),
	}
	for _, k := range []string{wire.EnvClaimCheckBytes, wire.EnvMaxPayloadBytes, wire.EnvMaxFutureSkew, wire.EnvRetention, wire.EnvDispatchLease, wire.EnvRetryDelay} {
		if v := s.Settings.String(k, ""); v != "" {
			settings[k] = v
		}
	}
	return settings, nil
}

func ingestFunction(_ context.Context, s *Stack) ([]Function, error) {
	settings, err := s.IngestSettings()
	if err != nil {
		return nil, err
	}
	cfg, err := wire.LoadIngestConfig(envconf.FromMap(settings), s.Topology)
	if err != nil {
		return nil, fmt.Errorf("ingest config: %w", err)
	}
	svc := wire.NewIngest(cfg, s.Topology, s.Clients, s.Log.With("function", "ingest"))
	return []Function{{Name: "ingest", Handler: svc.Handle, Timeout: 10 * time.Second}}, nil
}
