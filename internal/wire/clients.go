package wire

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Clients are the AWS service clients functions use. A function only
// touches the ones its config names; constructing a client makes no call.
type Clients struct {
	DynamoDB       *dynamodb.Client
	SQS            *sqs.Client
	S3             *s3.Client
	Lambda         *lambda.Client
	SecretsManager *secretsmanager.Client
	SNS            *sns.Client
	SFN            *sfn.Client
}

// NewClients builds every client from one aws.Config (in Lambda: the
// default config chain).
func NewClients(cfg aws.Config) Clients {
	return Clients{
		DynamoDB:       dynamodb.NewFromConfig(cfg),
		SQS:            sqs.NewFromConfig(cfg),
		S3:             s3.NewFromConfig(cfg),
		Lambda:         lambda.NewFromConfig(cfg),
		SecretsManager: secretsmanager.NewFromConfig(cfg),
		SNS:            sns.NewFromConfig(cfg),
		SFN:            sfn.NewFromConfig(cfg),
	}
}
