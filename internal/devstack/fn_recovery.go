package devstack

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/metric"
	"github.com/siteswarm/eventplatform/internal/wire"
)

func init() { register("recovery", recoveryFunctions) }

// DefaultSweepEvery is the sweeper's local cadence, as the EventBridge
// schedule deployed stages use; SWEEP_EVERY (`evp dev --sweep-every`)
// overrides it.
const DefaultSweepEvery = 2 * time.Minute

// Function names of the recovery plane (the CLI invokes "replay").
const (
	FunctionSweeper  = "sweeper"
	FunctionArchiver = "dlq-archiver"
	FunctionReplay   = "replay"
)

// RecoverySettings are the sweeper, dlq-archiver and replay settings that
// come from the local resources; their tunables may be overridden from the
// environment exactly as on Lambda.
func (s *Stack) RecoverySettings(alertTopicARN string) (map[string]string, error) {
	queues, err := json.Marshal(s.Resources.QueueURLs())
	if err != nil {
		return nil, err
	}
	dlqs := map[string]string{}
	for topic, q := range s.Resources.Queues {
		dlqs[topic] = q.DLQARN
	}
	dlqARNs, err := json.Marshal(dlqs)
	if err != nil {
		return nil, err
	}
	settings := map[string]string{
		wire.EnvEventsTable:    s.Resources.EventsTable,
		wire.EnvIncidentsTable: s.Resources.IncidentsTable,
		wire.EnvBucket:         s.Resources.Bucket,
		wire.EnvQueueURLs:      string(queues),
		wire.EnvDLQARNs:        string(dlqARNs),
		wire.EnvAlertTopicARN:  alertTopicARN,
		wire.EnvStage:          s.Resources.Prefix,
	}
	for _, k := range []string{
		wire.EnvAlertTopicARN, wire.EnvIncidentInlineBytes, wire.EnvClaimCheckBytes, wire.EnvRetention,
		wire.EnvSweepLease, wire.EnvSweepPageSize, wire.EnvSweepBatchSize, wire.EnvSweepConcurrency, wire.EnvSweepMargin,
		wire.EnvReplayConcurrency,
	} {
		if v := s.Settings.String(k, ""); v != "" {
			settings[k] = v
		}
	}
	return settings, nil
}

// alertTopic creates the local alert topic on the stack's SNS (fauxqs); an
// operator can subscribe a queue to it to watch alerts. Without SNS the
// archiver logs its alerts instead.
func (s *Stack) alertTopic(ctx context.Context) string {
	if s.Clients.SNS == nil {
		return ""
	}
	out, err := s.Clients.SNS.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(s.Resources.Prefix + "-alerts")})
	if err != nil {
		s.Log.WarnContext(ctx, "devstack: no SNS alert topic; incident alerts are log lines", "error", err)
		return ""
	}
	return aws.ToString(out.TopicArn)
}

func recoveryFunctions(ctx context.Context, s *Stack) ([]Function, error) {
	every := s.Settings.Duration(SettingSweepEvery, DefaultSweepEvery)
	if err := s.Settings.Err(); err != nil {
		return nil, err
	}
	if every < 100*time.Millisecond {
		return nil, fmt.Errorf("%s=%s: must be at least 100ms", SettingSweepEvery, every)
	}
	settings, err := s.RecoverySettings(s.alertTopic(ctx))
	if err != nil {
		return nil, err
	}
	metrics := &metric.Emitter{W: logWriter{s}}

	sweepCfg, err := wire.LoadSweeperConfig(envconf.FromMap(settings), s.Topology)
	if err != nil {
		return nil, fmt.Errorf("sweeper config: %w", err)
	}
	sweeper := wire.NewSweeper(sweepCfg, s.Topology, s.Clients, s.Log.With("function", FunctionSweeper), metrics)

	archCfg, err := wire.LoadArchiverConfig(envconf.FromMap(settings), s.Topology)
	if err != nil {
		return nil, fmt.Errorf("dlq-archiver config: %w", err)
	}
	arch := wire.NewArchiver(archCfg, s.Clients, s.Log.With("function", FunctionArchiver), metrics)
	var dlqs []lambdalocal.Trigger
	for _, name := range s.Topology.TopicNames() {
		q := s.Resources.Queues[name]
		dlqs = append(dlqs, lambdalocal.QueueSource{QueueURL: q.DLQURL, QueueARN: q.DLQARN, BatchSize: 10, MaxConcurrency: 2})
	}

	replayCfg, err := wire.LoadReplayConfig(envconf.FromMap(settings), s.Topology)
	if err != nil {
		return nil, fmt.Errorf("replay config: %w", err)
	}
	svc := wire.NewReplay(replayCfg, s.Topology, s.Clients, s.Log.With("function", FunctionReplay))

	return []Function{
		{Name: FunctionSweeper, Handler: sweeper.Handle, Timeout: wire.SweeperFunctionTimeout, Triggers: []lambdalocal.Trigger{lambdalocal.Schedule{Every: every}}},
		{Name: FunctionArchiver, Handler: arch.Handle, Timeout: wire.ArchiverFunctionTimeout, Triggers: dlqs},
		{Name: FunctionReplay, Handler: svc.Handle, Timeout: wire.ReplayFunctionTimeout},
	}, nil
}

// logWriter sends EMF lines to the stack's log at debug level: locally
// nobody ingests them, but they stay inspectable.
type logWriter struct{ s *Stack }

func (w logWriter) Write(p []byte) (int, error) {
	w.s.Log.Debug("emf", "line", string(p))
	return len(p), nil
}
