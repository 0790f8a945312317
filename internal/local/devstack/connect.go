package devstack

import (
	"context"
	"fmt"
	"os/user"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/observe/trace"
)

// Target says where the stack's AWS resources are.
type Target string

const (
	// TargetEmulators: the embedded emulators (the default).
	TargetEmulators Target = "emulators"
	// TargetAWS: the endpoints of the SDK's default configuration chain —
	// a profile, AWS_ENDPOINT_URL (LocalStack), a sandbox account.
	TargetAWS Target = "aws"
)

// connect builds the stack's clients: against freshly started emulators,
// or — when a profile or an endpoint override is given — against real
// endpoints through the SDK's default configuration chain. The functions
// themselves always run here, so the Lambda client points at this stack
// either way. Provisioning gets clients without the caller's middlewares,
// so a test's injected fault cannot break start-up.
func (s *Stack) connect(ctx context.Context, o Options) error {
	var (
		base  aws.Config
		build func(aws.Config) awslocal.Clients
	)
	if o.Profile == "" && !usesEndpointOverride(s.Settings) {
		s.Target = TargetEmulators
		var err error
		kind := s.Settings.String(awslocal.EnvDynamoDB, o.DynamoDB)
		warn := func(msg string) { s.Log.WarnContext(ctx, "devstack: "+msg, "function", "evp") }
		if s.Emulators, err = awslocal.Start(ctx, awslocal.Options{DynamoDB: kind, Warn: warn}); err != nil {
			return fmt.Errorf("devstack: emulators: %w", err)
		}
		e := s.Emulators
		base = awslocal.NewConfig()
		build = func(cfg aws.Config) awslocal.Clients {
			return awslocal.Clients{
				DynamoDB: awslocal.NewDynamoDBClient(cfg, e.DynamoDBEndpoint),
				SQS:      awslocal.NewSQSClient(cfg, e.SQSEndpoint),
				S3:       awslocal.NewS3Client(cfg, e.S3Endpoint),
				SNS:      awslocal.NewSNSClient(cfg, e.SNSEndpoint),
				SSM:      awslocal.NewSSMClient(cfg, e.ParamsEndpoint),
				Secrets:  awslocal.NewSecretsManagerClient(cfg, e.ParamsEndpoint),
			}
		}
	} else {
		s.Target = TargetAWS
		var opts []func(*config.LoadOptions) error
		if o.Profile != "" {
			opts = append(opts, config.WithSharedConfigProfile(o.Profile))
		}
		var err error
		if base, err = config.LoadDefaultConfig(ctx, opts...); err != nil {
			return fmt.Errorf("devstack: AWS configuration: %w", err)
		}
		if base.Region == "" {
			return fmt.Errorf("devstack: no AWS region: set AWS_REGION or the profile's region")
		}
		// An endpoint override is LocalStack or similar, where bucket names
		// do not resolve as host names.
		pathStyle := usesEndpointOverride(s.Settings)
		build = func(cfg aws.Config) awslocal.Clients {
			return awslocal.Clients{
				DynamoDB: dynamodb.NewFromConfig(cfg),
				SQS:      sqs.NewFromConfig(cfg),
				S3:       s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = pathStyle }),
				SNS:      sns.NewFromConfig(cfg),
				SSM:      ssm.NewFromConfig(cfg),
				Secrets:  secretsmanager.NewFromConfig(cfg),
			}
		}
	}
	s.provisioning = build(base)

	cfg := base.Copy()
	cfg.APIOptions = slices.Clip(append(slices.Clone(cfg.APIOptions), o.APIOptions...))
	trace.Instrument(&cfg)
	s.Clients = build(cfg)
	// Functions run in this process: invoke them here, whatever the target.
	// Locally, secrets come from the settings (the kit's Secrets Manager
	// serves make boot-check, which runs the deployed binaries). Step
	// Functions is served by the stack itself
	// (StepFunctionsPath).
	s.Clients.Lambda = awslocal.NewLambdaClient(cfg, s.URL())
	// So are their metrics: CloudWatch's GetMetricData over what they
	// emitted (awslocal.Metrics).
	s.Clients.CloudWatch = awslocal.NewCloudWatchClient(cfg, s.URL()+awslocal.MetricsPath)
	return nil
}

// defaultPrefix names a developer's resources: "local" in the emulators
// (they are private and in memory), "evp-local-<user>" behind real
// endpoints.
func defaultPrefix(t Target) string {
	if t == TargetEmulators {
		return "local"
	}
	name := "dev"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			b.WriteRune(r)
		}
	}
	clean := b.String()
	if clean == "" {
		clean = "dev"
	}
	return "evp-local-" + clean[:min(len(clean), 16)]
}
