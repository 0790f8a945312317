package devstack

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/dlqarchiverfn"
	"github.com/siteswarm/eventplatform/internal/wire/jobsfn"
	"github.com/siteswarm/eventplatform/internal/wire/replayfn"
	"github.com/siteswarm/eventplatform/internal/wire/sweeperfn"
)

func init() { register("recovery", recoveryFunctions) }

// DefaultSweepEvery is the sweeper's local cadence, as the EventBridge
// schedule deployed stages use; SWEEP_EVERY (`evp dev --sweep-every`)
// overrides it.
const DefaultSweepEvery = 2 * time.Minute

// Function names of the recovery plane (the CLI invokes "replay").
const (
	FunctionSweeper  = sweeperfn.Name
	FunctionArchiver = dlqarchiverfn.Name
	FunctionReplay   = replayfn.Name
)

// RecoveryResources are the sweeper, dlq-archiver and replay settings the
// local stack decides from its resources; tunables are read from the
// stack's settings under the names the Lambdas read.
func (s *Stack) RecoveryResources(alertTopicARN string) (map[string]string, error) {
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
	res := map[string]string{
		wire.EnvEventsTable:    s.Resources.EventsTable,
		wire.EnvIncidentsTable: s.Resources.IncidentsTable,
		wire.EnvBucket:         s.Resources.Bucket,
		wire.EnvQueueURLs:      string(queues),
		wire.EnvDLQARNs:        string(dlqARNs),
		wire.EnvStage:          s.Resources.Prefix,
		// replaying a failed job's incident restarts the job
		jobsfn.EnvJobsTable:    s.Resources.JobsTable,
		jobsfn.EnvJobsQueueURL: s.Resources.JobsQueue.URL,
	}
	if alertTopicARN != "" {
		res[dlqarchiverfn.EnvAlertTopicARN] = alertTopicARN
	}
	return res, nil
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
	res, err := s.RecoveryResources(s.alertTopic(ctx))
	if err != nil {
		return nil, err
	}
	c := s.Clients

	sweepCfg, err := sweeperfn.Load(s.env(res), s.Topology)
	if err != nil {
		return nil, fmt.Errorf("sweeper config: %w", err)
	}
	sweeper, err := sweeperfn.New(sweepCfg, c.Data(), s.runtime(sweeperfn.Name))
	if err != nil {
		return nil, err
	}

	archCfg, err := dlqarchiverfn.Load(s.env(res), s.Topology)
	if err != nil {
		return nil, fmt.Errorf("dlq-archiver config: %w", err)
	}
	arch, err := dlqarchiverfn.New(archCfg, dlqarchiverfn.Clients{DynamoDB: c.DynamoDB, S3: c.S3, SNS: c.SNS}, s.runtime(dlqarchiverfn.Name))
	if err != nil {
		return nil, err
	}
	var dlqs []lambdalocal.Trigger
	for _, name := range s.Topology.TopicNames() {
		q := s.Resources.Queues[name]
		dlqs = append(dlqs, lambdalocal.QueueSource{QueueURL: q.DLQURL, QueueARN: q.DLQARN, BatchSize: 10, MaxConcurrency: 2})
	}

	replayCfg, err := replayfn.Load(s.env(res), s.Topology)
	if err != nil {
		return nil, fmt.Errorf("replay config: %w", err)
	}
	fn, err := replayfn.New(replayCfg, c.Data(), s.runtime(replayfn.Name))
	if err != nil {
		return nil, err
	}

	return []Function{
		{Name: sweeperfn.Name, Handler: sweeper.Handle, Timeout: sweeperfn.FunctionTimeout, Triggers: []lambdalocal.Trigger{lambdalocal.Schedule{Every: every}}},
		{Name: dlqarchiverfn.Name, Handler: arch.Handle, Timeout: dlqarchiverfn.FunctionTimeout, Triggers: dlqs},
		{Name: replayfn.Name, Handler: fn.Handle, Timeout: replayfn.FunctionTimeout},
	}, nil
}
