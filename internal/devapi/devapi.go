package devapi

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// DefaultAddr is where the local stack listens unless told otherwise.
const DefaultAddr = "127.0.0.1:3000"

// DefaultURL is the local stack's URL at DefaultAddr.
const DefaultURL = "http://" + DefaultAddr

// Paths the local stack serves besides the functions' own routes.
const (
	// StepFunctionsPath serves the Step Functions API calls operators make
	// (StartExecution, DescribeExecution, GetExecutionHistory): point an
	// sfn client's BaseEndpoint at the stack's URL + StepFunctionsPath.
	StepFunctionsPath = "/__stepfunctions"
	// SQSPath serves the SQS API of the stack's queues (the emulator
	// behind it): point an sqs client's BaseEndpoint at the stack's URL +
	// SQSPath (`evp stripe redrive-eventbridge` drains the local
	// stripe-eventbridge DLQ through it).
	SQSPath = "/__sqs"
)

// HealthFunction is the subscriber-health function's name in the local
// stack (`evp topics pause|resume` tell it of the change).
const HealthFunction = "subscriber-health"

// ReplayStateMachineARN is the replay state machine's ARN locally: the one
// the dev stage's synthesized definition continues itself under (devstack
// checks its embedded definition names this one).
const ReplayStateMachineARN = "arn:aws:states:eu-west-1:123456789012:stateMachine:evp-dev-replay"

// StripeEventSource is the local stack's Stripe partner event source: the
// source of the EventBridge events `evp stripe send --via eventbridge`
// hands the stripe-eventbridge function (as a stage's rule on the partner
// bus would), and StripeEventBridgeFunction that function's name.
const (
	StripeEventSource         = "aws.partner/stripe.com/ed_local"
	StripeEventBridgeFunction = "stripe-eventbridge"
	// StripeEventBridgeDLQ is the local stack's stripe-eventbridge DLQ
	// (a stage's evp-<stage>-stripe-eventbridge-dlq).
	StripeEventBridgeDLQ = "local-stripe-eventbridge-dlq"
)

// Safe local defaults: clearly-local values, so nothing copied from a
// terminal can ever be mistaken for a production secret.
const (
	DefaultStripeSecret = "whsec_local_dev_secret"
	DefaultAdminKey     = "dev-admin-key"
)

// Region and AccountID are what the local stack reports in ARNs (the SQS
// emulator and the invoke server both use the LocalStack-style all-zero
// account).
const (
	Region    = "us-east-1"
	AccountID = "000000000000"
)

// Config builds the aws.Config every local client uses. It is assembled by
// hand rather than with config.LoadDefaultConfig: these machines set
// AWS_CA_BUNDLE, which LoadDefaultConfig refuses to combine with a custom
// HTTP client, and a local client must not pick up a developer's real
// credentials or profile by accident.
func Config() aws.Config {
	return aws.Config{
		Region:      Region,
		Credentials: aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider("test", "test", "")),
		HTTPClient:  awshttp.NewBuildableClient(),
		// Retryer and checksum settings stay at the SDK defaults, which is
		// what production runs (gofakes3 accepts the default CRC32 upload
		// checksums).
	}
}

// LambdaClient returns a Lambda client for endpoint (the stack's URL: it
// serves the Invoke API).
func LambdaClient(cfg aws.Config, endpoint string, optFns ...func(*lambda.Options)) *lambda.Client {
	return lambda.NewFromConfig(cfg, append([]func(*lambda.Options){func(o *lambda.Options) {
		o.BaseEndpoint = aws.String(endpoint)
	}}, optFns...)...)
}

// SFNClient returns a Step Functions client for endpoint (the stack's URL
// + StepFunctionsPath).
func SFNClient(cfg aws.Config, endpoint string, optFns ...func(*sfn.Options)) *sfn.Client {
	return sfn.NewFromConfig(cfg, append([]func(*sfn.Options){func(o *sfn.Options) {
		o.BaseEndpoint = aws.String(endpoint)
	}}, optFns...)...)
}

// SQSClient returns an SQS client for endpoint (the stack's URL +
// SQSPath).
func SQSClient(cfg aws.Config, endpoint string, optFns ...func(*sqs.Options)) *sqs.Client {
	return sqs.NewFromConfig(cfg, append([]func(*sqs.Options){func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(endpoint)
	}}, optFns...)...)
}
