package awslocal_test

import (
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/wire/dataclients"
)

// A function's Clients get the bundle's clients by type, embedded bundles
// included; a client type the bundle lacks is refused.
func TestFillSetsEachClientByType(t *testing.T) {
	t.Parallel()
	cfg := awslocal.NewConfig()
	c := awslocal.Clients{DynamoDB: dynamodb.NewFromConfig(cfg), SQS: sqs.NewFromConfig(cfg), Lambda: lambda.NewFromConfig(cfg)}
	var got struct {
		dataclients.Clients
		Lambda *lambda.Client
	}
	require.NoError(t, c.Fill(&got))
	require.Same(t, c.DynamoDB, got.DynamoDB)
	require.Same(t, c.SQS, got.SQS)
	require.Nil(t, got.S3, "the bundle has no S3 client: left nil")
	require.Same(t, c.Lambda, got.Lambda)

	var odd struct{ HTTP *http.Client }
	require.ErrorContains(t, c.Fill(&odd), "no *http.Client client")
	require.Error(t, c.Fill(got))
}
