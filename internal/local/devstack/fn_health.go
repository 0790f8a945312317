package devstack

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/consumerfn"
	"github.com/siteswarm/eventplatform/internal/wire/healthfn"
)

func init() { register("health", healthFunctions) }

// FunctionHealth is the subscriber-health monitor's name; the consumers
// tell it of their breakers' transitions.
const FunctionHealth = healthfn.Name

// HealthResources are the subscriber-health function's settings the local
// stack decides: every topic's consumer mapping, the queue URLs, the alert
// topic. HEALTH_PERIOD (its schedule) is read from the stack's settings.
func (s *Stack) HealthResources(alertTopicARN string) (map[string]string, error) {
	mappings := map[string]healthfn.Mapping{}
	for _, tp := range s.Topology.Topics {
		mappings[tp.Name] = healthfn.Mapping{Function: consumerfn.FunctionName(tp), QueueARN: s.Resources.Queues[tp.Name].ARN}
	}
	mj, err := json.Marshal(mappings)
	if err != nil {
		return nil, err
	}
	urls, err := json.Marshal(s.Resources.QueueURLs())
	if err != nil {
		return nil, err
	}
	res := map[string]string{
		wire.EnvEventsTable:  s.Resources.EventsTable,
		wire.EnvQueueURLs:    string(urls),
		wire.EnvStage:        s.Resources.Prefix,
		healthfn.EnvMappings: string(mj),
	}
	if alertTopicARN != "" {
		res[healthfn.EnvAlertTopicARN] = alertTopicARN
		if err := s.subscribeAlerts(context.Background(), alertTopicARN); err != nil {
			return nil, fmt.Errorf("alert inbox: %w", err)
		}
	}
	return res, nil
}

func healthFunctions(ctx context.Context, s *Stack) ([]Function, error) {
	res, err := s.HealthResources(s.alertTopic(ctx))
	if err != nil {
		return nil, err
	}
	cfg, err := healthfn.Load(s.env(res), s.Topology)
	if err != nil {
		return nil, fmt.Errorf("%s config: %w", healthfn.Name, err)
	}
	c := s.Clients
	m, err := healthfn.New(cfg, healthfn.Clients{DynamoDB: c.DynamoDB, SQS: c.SQS, Lambda: c.Lambda, SNS: c.SNS}, s.runtime(healthfn.Name))
	if err != nil {
		return nil, err
	}
	// Its runs wait for what is due before the next, up to a period: the
	// local timeout leaves room for that as the deployed one does.
	timeout := max(healthfn.FunctionTimeout, cfg.Monitor.Period+30*time.Second)
	return []Function{{Name: healthfn.Name, Handler: m.Handle, Timeout: timeout, Triggers: []lambdalocal.Trigger{lambdalocal.Schedule{Every: cfg.Monitor.Period}}}}, nil
}
