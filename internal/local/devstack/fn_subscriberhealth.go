package devstack

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/siteswarm/eventplatform/internal/wire/consumerfn"
	"github.com/siteswarm/eventplatform/internal/wire/subscriberhealthfn"
)

func init() {
	locals[subscriberhealthfn.Name] = local{
		env: func(ctx context.Context, s *Stack) (map[string]string, error) {
			return s.healthSettings(ctx, s.alertTopic(ctx))
		},
		// Its runs wait for what is due before the next, up to a period:
		// the local timeout leaves room for that as the deployed one does.
		timeout: func(conf any) time.Duration {
			return max(subscriberhealthfn.FunctionTimeout, conf.(subscriberhealthfn.Config).Monitor.Period+30*time.Second)
		},
	}
}

// FunctionHealth is the subscriber-health monitor's name; the consumers
// tell it of their breakers' transitions.
const FunctionHealth = subscriberhealthfn.Name

// healthSettings are the subscriber-health function's settings the local
// stack decides: every topic's consumer mapping and the alert topic.
// HEALTH_PERIOD (its schedule, and the period the monitor reads) is the
// stack's setting.
func (s *Stack) healthSettings(ctx context.Context, alertTopicARN string) (map[string]string, error) {
	mappings := map[string]subscriberhealthfn.Mapping{}
	for _, tp := range s.Topology.Topics {
		mappings[tp.Name] = subscriberhealthfn.Mapping{Function: consumerfn.FunctionName(tp), QueueARN: s.Resources.Queues[tp.Name].ARN}
	}
	mj, err := json.Marshal(mappings)
	if err != nil {
		return nil, err
	}
	res := map[string]string{subscriberhealthfn.EnvMappings: string(mj)}
	if alertTopicARN != "" {
		res[subscriberhealthfn.EnvAlertTopicARN] = alertTopicARN
		if err := s.subscribeAlerts(ctx, alertTopicARN); err != nil {
			return nil, fmt.Errorf("alert inbox: %w", err)
		}
	}
	return res, nil
}
