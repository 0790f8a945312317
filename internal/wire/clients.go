package wire

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Clients are the AWS service clients functions use. A function only
// touches the ones its config names.
type Clients struct {
	DynamoDB *dynamodb.Client
	SQS      *sqs.Client
	S3       *s3.Client
	Lambda   *lambda.Client
}

// NewClients builds every client from one aws.Config (in Lambda: the
// default config chain).
func NewClients(cfg aws.Config) Clients {
	return Clients{
		DynamoDB: dynamodb.NewFromConfig(cfg),
		SQS:      sqs.NewFromConfig(cfg),
		S3:       s3.NewFromConfig(cfg),
		Lambda:   lambda.NewFromConfig(cfg),
	}
}
