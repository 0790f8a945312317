package devstack

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/siteswarm/eventplatform/internal/wire/dlqarchiverfn"
	"github.com/siteswarm/eventplatform/internal/wire/replayfn"
	"github.com/siteswarm/eventplatform/internal/wire/sweeperfn"
)

func init() {
	locals[dlqarchiverfn.Name] = local{env: func(ctx context.Context, s *Stack) (map[string]string, error) {
		if arn := s.alertTopic(ctx); arn != "" {
			return map[string]string{dlqarchiverfn.EnvAlertTopicARN: arn}, nil
		}
		return nil, nil
	}}
}

// DefaultSweepEvery is the sweeper's local cadence, as the EventBridge
// schedule deployed stages use; SWEEP_EVERY (`evp dev --sweep-every`)
// overrides it.
const DefaultSweepEvery = sweeperfn.Every

// Function names of the recovery plane (the CLI invokes "replay").
const (
	FunctionSweeper  = sweeperfn.Name
	FunctionArchiver = dlqarchiverfn.Name
	FunctionReplay   = replayfn.Name
)

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
