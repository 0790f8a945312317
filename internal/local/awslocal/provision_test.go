package awslocal_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/topology"
)

func TestProvisionFromTopology(t *testing.T) {
	t.Parallel()
	emu := awslocaltest.Shared(t)
	c := emu.Clients()
	ctx := context.Background()
	prefix := awslocal.NewPrefix()

	top := topology.Default().Clone()
	fifo := top.Topics[0]
	fifo.Name, fifo.FIFO = "ordered.events", true
	top.Topics = append(top.Topics, fifo)

	res, err := awslocal.Provision(ctx, c, prefix, top)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, awslocal.Teardown(context.Background(), c, res)) })

	require.Equal(t, prefix, res.Prefix)
	require.Equal(t, prefix+"-events", res.EventsTable)
	require.Equal(t, prefix+"-incidents", res.IncidentsTable)
	require.Equal(t, prefix+"-purge", res.PurgeTable)
	require.Equal(t, prefix+"-archive", res.Bucket)

	// Tables: keys, GSIs with their projections.
	for _, def := range table.All() {
		out, err := c.DynamoDB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(def.PhysicalName(prefix))})
		require.NoError(t, err, def.Name)
		require.Equal(t, def.PK.Name, aws.ToString(out.Table.KeySchema[0].AttributeName))
		require.Len(t, out.Table.GlobalSecondaryIndexes, len(def.Indexes), def.Name)
		for _, want := range def.Indexes {
			var found bool
			for _, g := range out.Table.GlobalSecondaryIndexes {
				if aws.ToString(g.IndexName) != want.Name {
					continue
				}
				found = true
				require.Equal(t, string(want.Projection), string(g.Projection.ProjectionType), want.Name)
				if want.Projection == table.ProjectInclude {
					require.ElementsMatch(t, want.NonKey, g.Projection.NonKeyAttributes)
				}
			}
			require.True(t, found, want.Name)
		}
		ttl, err := c.DynamoDB.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(def.PhysicalName(prefix))})
		require.NoError(t, err)
		if def.TTLAttribute != "" {
			require.Equal(t, ddbtypes.TimeToLiveStatusEnabled, ttl.TimeToLiveDescription.TimeToLiveStatus, def.Name)
			require.Equal(t, def.TTLAttribute, aws.ToString(ttl.TimeToLiveDescription.AttributeName))
		} else {
			require.Equal(t, ddbtypes.TimeToLiveStatusDisabled, ttl.TimeToLiveDescription.TimeToLiveStatus, def.Name)
		}
	}

	// The tenant index only projects what it declares.
	_, err = c.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(res.EventsTable), Item: map[string]ddbtypes.AttributeValue{
		"pk": s("EVENT#1"), "sk": s("LEDGER"), "tenantId": s("t1"), "tenantSk": s("2024#1"), "type": s("x"), "payload": s("secret"),
	}})
	require.NoError(t, err)
	q, err := c.DynamoDB.Query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(res.EventsTable), IndexName: aws.String(table.IndexTenant),
		KeyConditionExpression:    aws.String("tenantId = :t"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":t": s("t1")},
	})
	require.NoError(t, err)
	require.Len(t, q.Items, 1)
	require.Contains(t, q.Items[0], "type")
	require.NotContains(t, q.Items[0], "payload")

	// Queues: one per topic plus its DLQ, tuned from the topology.
	require.Len(t, res.Queues, len(top.Topics))
	require.Len(t, res.QueueURLs(), len(top.Topics))
	require.Len(t, res.DLQURLs(), len(top.Topics))
	for _, tp := range top.Topics {
		qu := res.Queues[tp.Name]
		require.Equal(t, tp.Name, qu.Topic)
		require.Equal(t, qu.URL, res.QueueURLs()[tp.Name])
		require.Equal(t, qu.DLQURL, res.DLQURLs()[tp.Name])
		main := queueAttrs(t, c.SQS, qu.URL)
		require.Equal(t, qu.ARN, main["QueueArn"])
		require.Equal(t, strconv.Itoa(int(tp.VisibilityTimeout/time.Second)), main["VisibilityTimeout"], tp.Name)
		var rp struct {
			DeadLetterTargetArn string          `json:"deadLetterTargetArn"`
			MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
		}
		require.NoError(t, json.Unmarshal([]byte(main["RedrivePolicy"]), &rp))
		require.Equal(t, qu.DLQARN, rp.DeadLetterTargetArn)
		require.Contains(t, string(rp.MaxReceiveCount), strconv.Itoa(tp.RedriveMaxReceiveCount()))
		dlq := queueAttrs(t, c.SQS, qu.DLQURL)
		require.Equal(t, qu.DLQARN, dlq["QueueArn"])
		require.Equal(t, "1209600", dlq["MessageRetentionPeriod"])
		if tp.FIFO {
			require.Equal(t, "true", main["FifoQueue"])
			require.Equal(t, "false", main["ContentBasedDeduplication"])
			require.Equal(t, "true", dlq["FifoQueue"])
		} else {
			require.NotEqual(t, "true", main["FifoQueue"])
		}
	}

	_, err = c.S3.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(res.Bucket)})
	require.NoError(t, err)

	// Re-running is idempotent and converges a changed topology.
	top.Topics[0].VisibilityTimeout = 240 * time.Second
	again, err := awslocal.Provision(ctx, c, prefix, top)
	require.NoError(t, err)
	require.Equal(t, res.QueueURLs(), again.QueueURLs())
	require.Equal(t, "240", queueAttrs(t, c.SQS, again.Queues[top.Topics[0].Name].URL)["VisibilityTimeout"])
}

func TestTeardownRemovesEverything(t *testing.T) {
	t.Parallel()
	emu := awslocaltest.Shared(t)
	c := emu.Clients()
	ctx := context.Background()
	prefix := awslocal.NewPrefix()
	res, err := awslocal.Provision(ctx, c, prefix, testkit.OneTopic("teardown.test", 3, false))
	require.NoError(t, err)
	_, err = c.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(res.Bucket), Key: aws.String("k"), Body: nil})
	require.NoError(t, err)

	require.NoError(t, awslocal.Teardown(ctx, c, res))
	require.NoError(t, awslocal.Teardown(ctx, c, res), "tearing down twice is fine")

	tables, err := c.DynamoDB.ListTables(ctx, &dynamodb.ListTablesInput{ExclusiveStartTableName: aws.String(prefix)})
	require.NoError(t, err)
	for _, n := range tables.TableNames {
		require.NotContains(t, n, prefix)
	}
	queues, err := c.SQS.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(prefix)})
	require.NoError(t, err)
	require.Empty(t, queues.QueueUrls)
	_, err = c.S3.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(res.Bucket)})
	require.Error(t, err)
}

func queueAttrs(t *testing.T, c *sqs.Client, url string) map[string]string {
	t.Helper()
	out, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
	})
	require.NoError(t, err)
	return out.Attributes
}
