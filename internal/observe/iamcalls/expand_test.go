package iamcalls_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/observe/costmodel"
	"github.com/siteswarm/eventplatform/internal/observe/iamcalls"
)

const (
	ddb = "arn:${Partition}:dynamodb:${Region}:${Account}:table/"
	sq  = "arn:${Partition}:sqs:${Region}:${Account}:"
	fn  = "arn:${Partition}:lambda:${Region}:${Account}:"
)

func r(action, resource string) iamcalls.Request {
	return iamcalls.Request{Action: action, Resource: resource}
}

// Each SDK call is what IAM authorizes for it: one request per item,
// statement, table or object, on the ARN IAM evaluates.
func TestExpandIsWhatIAMAuthorizes(t *testing.T) {
	t.Parallel()
	key := map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "k"}}
	for name, c := range map[string]struct {
		in   any
		want []iamcalls.Request
	}{
		"get item": {&dynamodb.GetItemInput{TableName: aws.String("events"), Key: key}, []iamcalls.Request{r("dynamodb:GetItem", ddb+"events")}},
		"transaction: an action per item": {&dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
			{Put: &ddbtypes.Put{TableName: aws.String("events")}},
			{Delete: &ddbtypes.Delete{TableName: aws.String("events")}},
			{Update: &ddbtypes.Update{TableName: aws.String("jobs")}},
			{ConditionCheck: &ddbtypes.ConditionCheck{TableName: aws.String("jobs")}},
		}}, []iamcalls.Request{r("dynamodb:PutItem", ddb+"events"), r("dynamodb:DeleteItem", ddb+"events"), r("dynamodb:UpdateItem", ddb+"jobs"), r("dynamodb:ConditionCheckItem", ddb+"jobs")}},
		"transactional read": {&dynamodb.TransactGetItemsInput{TransactItems: []ddbtypes.TransactGetItem{{Get: &ddbtypes.Get{TableName: aws.String("jobs")}}}},
			[]iamcalls.Request{r("dynamodb:GetItem", ddb+"jobs")}},
		"query on an index":  {&dynamodb.QueryInput{TableName: aws.String("events"), IndexName: aws.String("tenant")}, []iamcalls.Request{r("dynamodb:Query", ddb+"events/index/tenant")}},
		"query on the table": {&dynamodb.QueryInput{TableName: aws.String("events")}, []iamcalls.Request{r("dynamodb:Query", ddb+"events")}},
		"batch write per table": {&dynamodb.BatchWriteItemInput{RequestItems: map[string][]ddbtypes.WriteRequest{"events": nil}},
			[]iamcalls.Request{r("dynamodb:BatchWriteItem", ddb+"events")}},
		"batch get per table": {&dynamodb.BatchGetItemInput{RequestItems: map[string]ddbtypes.KeysAndAttributes{"events": {}}},
			[]iamcalls.Request{r("dynamodb:BatchGetItem", ddb+"events")}},
		"partiql statements": {&dynamodb.BatchExecuteStatementInput{Statements: []ddbtypes.BatchStatementRequest{
			{Statement: aws.String(`UPDATE "events" SET "s" = ? WHERE "pk" = ? AND "sk" = ?`)},
			{Statement: aws.String(`DELETE FROM "events" WHERE "pk" = ?`)},
			{Statement: aws.String(`INSERT INTO events VALUE {'pk': ?}`)},
			{Statement: aws.String(`SELECT * FROM "events"."tenant" WHERE "t" = ?`)},
		}}, []iamcalls.Request{r("dynamodb:PartiQLUpdate", ddb+"events"), r("dynamodb:PartiQLDelete", ddb+"events"), r("dynamodb:PartiQLInsert", ddb+"events"), r("dynamodb:PartiQLSelect", ddb+"events/index/tenant")}},
		"versioned delete": {&s3.DeleteObjectInput{Bucket: aws.String("b"), Key: aws.String("payloads/t/e"), VersionId: aws.String("v1")},
			[]iamcalls.Request{r("s3:DeleteObjectVersion", "arn:${Partition}:s3:::b/payloads/t/e")}},
		"plain delete":   {&s3.DeleteObjectInput{Bucket: aws.String("b"), Key: aws.String("jobs/x")}, []iamcalls.Request{r("s3:DeleteObject", "arn:${Partition}:s3:::b/jobs/x")}},
		"versioned read": {&s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("k"), VersionId: aws.String("v")}, []iamcalls.Request{r("s3:GetObjectVersion", "arn:${Partition}:s3:::b/k")}},
		"head is a read": {&s3.HeadObjectInput{Bucket: aws.String("b"), Key: aws.String("k")}, []iamcalls.Request{r("s3:GetObject", "arn:${Partition}:s3:::b/k")}},
		"delete objects per key": {&s3.DeleteObjectsInput{Bucket: aws.String("b"), Delete: &s3types.Delete{Objects: []s3types.ObjectIdentifier{{Key: aws.String("a")}, {Key: aws.String("c"), VersionId: aws.String("v")}}}},
			[]iamcalls.Request{r("s3:DeleteObject", "arn:${Partition}:s3:::b/a"), r("s3:DeleteObjectVersion", "arn:${Partition}:s3:::b/c")}},
		"copy reads its source": {&s3.CopyObjectInput{Bucket: aws.String("b"), Key: aws.String("archive/x"), CopySource: aws.String("b/jobs/y%20z?versionId=v")},
			[]iamcalls.Request{r("s3:PutObject", "arn:${Partition}:s3:::b/archive/x"), r("s3:GetObjectVersion", "arn:${Partition}:s3:::b/jobs/y z")}},
		"list versions: the bucket with its prefix": {&s3.ListObjectVersionsInput{Bucket: aws.String("b"), Prefix: aws.String("payloads/t/")},
			[]iamcalls.Request{{Action: "s3:ListBucketVersions", Resource: "arn:${Partition}:s3:::b", Context: map[string]string{"s3:prefix": "payloads/t/"}}}},
		"list without a prefix":     {&s3.ListObjectsV2Input{Bucket: aws.String("b")}, []iamcalls.Request{r("s3:ListBucket", "arn:${Partition}:s3:::b")}},
		"send batch is SendMessage": {&sqs.SendMessageBatchInput{QueueUrl: aws.String("http://127.0.0.1:9/000000000000/q-billing")}, []iamcalls.Request{r("sqs:SendMessage", sq+"q-billing")}},
		"receive":                   {&sqs.ReceiveMessageInput{QueueUrl: aws.String("http://127.0.0.1:9/000000000000/q")}, []iamcalls.Request{r("sqs:ReceiveMessage", sq+"q")}},
		"delete batch":              {&sqs.DeleteMessageBatchInput{QueueUrl: aws.String("http://127.0.0.1:9/000000000000/q.fifo")}, []iamcalls.Request{r("sqs:DeleteMessage", sq+"q.fifo")}},
		"invoke by name":            {&lambda.InvokeInput{FunctionName: aws.String("ingest")}, []iamcalls.Request{r("lambda:InvokeFunction", fn+"function:ingest")}},
		"invoke by ARN":             {&lambda.InvokeInput{FunctionName: aws.String("arn:aws:lambda:eu-west-1:1:function:ingest:live")}, []iamcalls.Request{r("lambda:InvokeFunction", fn+"function:ingest:live")}},
		"mapping update":            {&lambda.UpdateEventSourceMappingInput{UUID: aws.String("u-1")}, []iamcalls.Request{r("lambda:UpdateEventSourceMapping", fn+"event-source-mapping:u-1")}},
		"mapping list":              {&lambda.ListEventSourceMappingsInput{}, []iamcalls.Request{r("lambda:ListEventSourceMappings", "*")}},
		"parameters by path":        {&ssm.GetParametersByPathInput{Path: aws.String("/evp/dev/config/purge-zones")}, []iamcalls.Request{r("ssm:GetParametersByPath", "arn:${Partition}:ssm:${Region}:${Account}:parameter/evp/dev/config/purge-zones")}},
		"metric data":               {&cloudwatch.GetMetricDataInput{}, []iamcalls.Request{r("cloudwatch:GetMetricData", "*")}},
		"secret":                    {&secretsmanager.GetSecretValueInput{SecretId: aws.String("arn:aws:secretsmanager:eu-west-1:1:secret:Key-AbC")}, []iamcalls.Request{r("secretsmanager:GetSecretValue", "arn:${Partition}:secretsmanager:${Region}:${Account}:secret:Key-AbC")}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, ok := iamcalls.Expand(c.in, nil)
			require.True(t, ok)
			require.ElementsMatch(t, c.want, got)
		})
	}
}

// A call without a rule is refused, never guessed.
func TestExpandRefusesAnUnknownCall(t *testing.T) {
	t.Parallel()
	_, ok := iamcalls.Expand(&s3.PutBucketPolicyInput{Bucket: aws.String("b")}, nil)
	require.False(t, ok)
}

// The recorder keeps only attributed calls, once per distinct request
// with a count, each with how it was made.
func TestRecorderAttributesThroughTheCostSeam(t *testing.T) {
	t.Parallel()
	rec := iamcalls.NewRecorder(nil, "test")
	cfg := aws.Config{Region: "us-east-1", Credentials: aws.AnonymousCredentials{}, APIOptions: nil}
	client := sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		o.BaseEndpoint = aws.String("http://127.0.0.1:1")
		o.APIOptions = append(o.APIOptions, rec.APIOption)
		o.RetryMaxAttempts = 1
	})
	url := aws.String("http://127.0.0.1:1/000000000000/q")
	ctx := context.Background()
	_, _ = client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: url}) // the harness's: not recorded
	fnCtx := costmodel.Attribute(ctx, "consumer-billing-events")
	for range 2 {
		_, _ = client.GetQueueAttributes(fnCtx, &sqs.GetQueueAttributesInput{QueueUrl: url})
	}
	_, _ = client.ReceiveMessage(iamcalls.Via(fnCtx, iamcalls.ViaEventSource), &sqs.ReceiveMessageInput{QueueUrl: url})
	got := rec.Recording()
	require.Equal(t, []iamcalls.Call{
		{Function: "consumer-billing-events", Operation: "SQS.GetQueueAttributes", Request: r("sqs:GetQueueAttributes", sq+"q"), Count: 2},
		{Function: "consumer-billing-events", Via: iamcalls.ViaEventSource, Operation: "SQS.ReceiveMessage", Request: r("sqs:ReceiveMessage", sq+"q"), Count: 1},
	}, got.Calls)
}
