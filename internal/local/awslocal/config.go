package awslocal

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/siteswarm/eventplatform/internal/devapi"
)

// Region and AccountID are what the emulators report in ARNs (fauxqs and
// the invoke server both use the LocalStack-style all-zero account); the
// local stack's clients know them from package devapi.
const (
	Region    = devapi.Region
	AccountID = devapi.AccountID
)

// NewConfig builds the aws.Config every local client uses (devapi.Config:
// static local credentials, never a developer's real profile).
func NewConfig() aws.Config { return devapi.Config() }

// NewDynamoDBClient returns a DynamoDB client for endpoint.
func NewDynamoDBClient(cfg aws.Config, endpoint string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.NewFromConfig(cfg, append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(endpoint)
	}}, optFns...)...)
}

// NewSQSClient returns an SQS client for endpoint (fauxqs).
func NewSQSClient(cfg aws.Config, endpoint string, optFns ...func(*sqs.Options)) *sqs.Client {
	return sqs.NewFromConfig(cfg, append([]func(*sqs.Options){func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(endpoint)
	}}, optFns...)...)
}

// NewSNSClient returns an SNS client for endpoint (fauxqs serves SNS on the
// same port as SQS).
func NewSNSClient(cfg aws.Config, endpoint string, optFns ...func(*sns.Options)) *sns.Client {
	return sns.NewFromConfig(cfg, append([]func(*sns.Options){func(o *sns.Options) {
		o.BaseEndpoint = aws.String(endpoint)
	}}, optFns...)...)
}

// NewS3Client returns an S3 client for endpoint. Path-style addressing is
// forced: virtual-hosted style would put the bucket in the host name, which
// does not resolve for 127.0.0.1.
func NewS3Client(cfg aws.Config, endpoint string, optFns ...func(*s3.Options)) *s3.Client {
	return s3.NewFromConfig(cfg, append([]func(*s3.Options){func(o *s3.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.UsePathStyle = true
	}}, optFns...)...)
}

// NewLambdaClient returns a Lambda client for endpoint (a Functions server).
func NewLambdaClient(cfg aws.Config, endpoint string, optFns ...func(*lambda.Options)) *lambda.Client {
	return devapi.LambdaClient(cfg, endpoint, optFns...)
}

// NewSFNClient returns a Step Functions client for the local stack's
// Step Functions endpoint (its URL + /__stepfunctions).
func NewSFNClient(cfg aws.Config, endpoint string, optFns ...func(*sfn.Options)) *sfn.Client {
	return devapi.SFNClient(cfg, endpoint, optFns...)
}

// FunctionARN is the ARN the invoke server reports for a function name.
func FunctionARN(name string) string {
	return fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", Region, AccountID, name)
}

// ParseFunctionName splits the forms Lambda accepts for FunctionName:
// "name", "name:qualifier", "123456789012:function:name[:qualifier]" and
// "arn:aws:lambda:region:account:function:name[:qualifier]".
func ParseFunctionName(s string) (name, qualifier string) {
	parts := strings.Split(s, ":")
	switch {
	case len(parts) >= 7 && parts[0] == "arn" && parts[5] == "function":
		name = parts[6]
		if len(parts) > 7 {
			qualifier = parts[7]
		}
	case len(parts) >= 3 && parts[1] == "function":
		name = parts[2]
		if len(parts) > 3 {
			qualifier = parts[3]
		}
	default:
		name = parts[0]
		if len(parts) > 1 {
			qualifier = parts[1]
		}
	}
	return name, qualifier
}
