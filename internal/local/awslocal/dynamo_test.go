package awslocal_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
)

func s(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }

func key(pk, sk string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{table.AttrPK: s(pk), table.AttrSK: s(sk)}
}

func requireAPIError(t *testing.T, err error, code string) smithy.APIError {
	t.Helper()
	require.Error(t, err)
	var api smithy.APIError
	require.True(t, errors.As(err, &api), "not an API error: %v", err)
	require.Equal(t, code, api.ErrorCode(), "error: %v", err)
	return api
}

func TestDynamoTablesAreActive(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t)
	ctx := context.Background()

	name := env.Prefix + "-scratch"
	created, err := env.DynamoDB.CreateTable(ctx, awslocal.CreateTableInput(table.Incidents, name))
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = env.DynamoDB.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	require.Equal(t, ddbtypes.TableStatusActive, created.TableDescription.TableStatus)

	for _, tn := range env.Resources.Tables {
		out, err := env.DynamoDB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tn)})
		require.NoError(t, err)
		require.Equal(t, ddbtypes.TableStatusActive, out.Table.TableStatus, tn)
		require.Contains(t, aws.ToString(out.Table.TableArn), ":table/"+tn)
		for _, g := range out.Table.GlobalSecondaryIndexes {
			require.Equal(t, ddbtypes.IndexStatusActive, g.IndexStatus, aws.ToString(g.IndexName))
		}
	}
	events, err := env.DynamoDB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(env.Resources.EventsTable)})
	require.NoError(t, err)
	require.Len(t, events.Table.GlobalSecondaryIndexes, 2)
	require.Equal(t, ddbtypes.BillingModePayPerRequest, events.Table.BillingModeSummary.BillingMode)
	require.Len(t, events.Table.AttributeDefinitions, 6) // pk, sk and the two GSIs' keys

	// The SDK waiter written for AWS returns at once.
	require.NoError(t, dynamodb.NewTableExistsWaiter(env.DynamoDB).Wait(ctx,
		&dynamodb.DescribeTableInput{TableName: aws.String(name)}, 5*time.Second))

	// ListTables (answered by the wrapper) pages through every table.
	var names []string
	p := dynamodb.NewListTablesPaginator(env.DynamoDB, &dynamodb.ListTablesInput{Limit: aws.Int32(2)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		require.NoError(t, err)
		names = append(names, page.TableNames...)
	}
	require.Subset(t, names, append(env.Resources.Tables, name))

	// What minidyn lacks fails with a decodable error, not a parse failure.
	_, err = env.DynamoDB.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String(name)})
	api := requireAPIError(t, err, "UnknownOperationException")
	require.Contains(t, api.ErrorMessage(), "minidyn")
}

func TestDynamoTimeToLive(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t)
	ctx := context.Background()

	out, err := env.DynamoDB.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(env.Resources.EventsTable)})
	require.NoError(t, err)
	require.Equal(t, ddbtypes.TimeToLiveStatusEnabled, out.TimeToLiveDescription.TimeToLiveStatus)
	require.Equal(t, table.AttrExpiresAt, aws.ToString(out.TimeToLiveDescription.AttributeName))
	attr, ok := env.Emulators.Dynamo.TTLAttribute(env.Resources.EventsTable)
	require.True(t, ok)
	require.Equal(t, table.AttrExpiresAt, attr)

	out, err = env.DynamoDB.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(env.Resources.IncidentsTable)})
	require.NoError(t, err)
	require.Equal(t, ddbtypes.TimeToLiveStatusDisabled, out.TimeToLiveDescription.TimeToLiveStatus)

	// Like AWS, enabling twice is an error (so provisioning must check first).
	_, err = env.DynamoDB.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(env.Resources.EventsTable),
		TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String(table.AttrExpiresAt), Enabled: aws.Bool(true)},
	})
	requireAPIError(t, err, "ValidationException")

	_, err = env.DynamoDB.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(env.Prefix + "-missing"),
		TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String("x"), Enabled: aws.Bool(true)},
	})
	var rnf *ddbtypes.ResourceNotFoundException
	require.ErrorAs(t, err, &rnf)
}

func TestDynamoItemSizeLimit(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t)
	ctx := context.Background()
	tbl := aws.String(env.Resources.PurgeTable)

	item := func(sk string, payload int) map[string]ddbtypes.AttributeValue {
		it := key("P", sk)
		it["payload"] = s(strings.Repeat("x", payload))
		return it
	}

	// 399 KB goes in, 401 KB does not.
	_, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: item("ok", 399*1024)})
	require.NoError(t, err)
	_, err = env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: item("big", 401*1024)})
	api := requireAPIError(t, err, "ValidationException")
	require.Equal(t, awslocal.ItemTooLargeMessage, api.ErrorMessage())

	// Attribute names count too: 400 KB of value plus its key is over.
	_, err = env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: item("edge", awslocal.MaxItemSize)})
	requireAPIError(t, err, "ValidationException")

	_, err = env.DynamoDB.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]ddbtypes.WriteRequest{
		*tbl: {{PutRequest: &ddbtypes.PutRequest{Item: item("b1", 10)}}, {PutRequest: &ddbtypes.PutRequest{Item: item("b2", 401*1024)}}},
	}})
	requireAPIError(t, err, "ValidationException")

	_, err = env.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Put: &ddbtypes.Put{TableName: tbl, Item: item("t1", 10)}},
		{Put: &ddbtypes.Put{TableName: tbl, Item: item("t2", 401*1024)}},
	}})
	requireAPIError(t, err, "ValidationException")
	got, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: key("P", "t1"), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.Empty(t, got.Item, "a rejected transaction wrote nothing")

	// An update that grows the item past the limit is rejected and the
	// item keeps its previous image.
	_, err = env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: tbl, Key: key("P", "ok"),
		UpdateExpression:          aws.String("SET extra = :x"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":x": s(strings.Repeat("y", 2*1024))},
	})
	api = requireAPIError(t, err, "ValidationException")
	require.Equal(t, awslocal.UpdateItemTooLargeMessage, api.ErrorMessage())
	got, err = env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: key("P", "ok"), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.NotContains(t, got.Item, "extra")
	require.Len(t, got.Item["payload"].(*ddbtypes.AttributeValueMemberS).Value, 399*1024)

	// A small update still works.
	_, err = env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: tbl, Key: key("P", "ok"),
		UpdateExpression:          aws.String("SET extra = :x"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":x": s("small")},
	})
	require.NoError(t, err)

	// In a transaction the oversized update cancels everything, with a
	// ValidationError reason at its index.
	_, err = env.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Put: &ddbtypes.Put{TableName: tbl, Item: item("t3", 10)}},
		{Update: &ddbtypes.Update{
			TableName: tbl, Key: key("P", "ok"),
			UpdateExpression:          aws.String("SET extra = :x"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":x": s(strings.Repeat("y", 2*1024))},
		}},
	}})
	var tce *ddbtypes.TransactionCanceledException
	require.ErrorAs(t, err, &tce)
	require.Len(t, tce.CancellationReasons, 2)
	require.Equal(t, "None", aws.ToString(tce.CancellationReasons[0].Code))
	require.Equal(t, "ValidationError", aws.ToString(tce.CancellationReasons[1].Code))
	got, err = env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: key("P", "t3"), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.Empty(t, got.Item, "the transaction's put was rolled back")
	got, err = env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: key("P", "ok"), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.Equal(t, "small", got.Item["extra"].(*ddbtypes.AttributeValueMemberS).Value)
}

func TestDynamoRemoveIsRejected(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t)
	ctx := context.Background()
	tbl := aws.String(env.Resources.EventsTable)

	row := key("EVENT#1", "DISPATCH#billing.events")
	row[table.AttrSweepPK] = s("pending#3")
	row[table.AttrNextRetryAt] = &ddbtypes.AttributeValueMemberN{Value: "1000"}
	row["m"] = &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{"a": s("1"), "b": s("2")}}
	_, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: row})
	require.NoError(t, err)

	for _, expr := range []string{
		"REMOVE sweepPk",
		"SET #s = :v REMOVE sweepPk",
		"remove #p, m.a",
	} {
		_, err = env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: tbl, Key: key("EVENT#1", "DISPATCH#billing.events"),
			UpdateExpression:          aws.String(expr),
			ExpressionAttributeNames:  names(expr),
			ExpressionAttributeValues: values(expr),
		})
		api := requireAPIError(t, err, "ValidationException")
		require.Contains(t, api.ErrorMessage(), "silently ignores a top-level REMOVE", expr)
	}

	_, err = env.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{{
		Update: &ddbtypes.Update{TableName: tbl, Key: key("EVENT#1", "DISPATCH#billing.events"), UpdateExpression: aws.String("REMOVE sweepPk")},
	}}})
	requireAPIError(t, err, "ValidationException")

	// SET (the platform's way to leave a sparse index) still works, and so
	// does a nested REMOVE, which minidyn applies correctly.
	_, err = env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: tbl, Key: key("EVENT#1", "DISPATCH#billing.events"),
		UpdateExpression:          aws.String("SET sweepPk = :done, #status = :s REMOVE m.a"),
		ExpressionAttributeNames:  map[string]string{"#status": "status"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":done": s("completed#3"), ":s": s("completed")},
	})
	require.NoError(t, err)
	got, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: key("EVENT#1", "DISPATCH#billing.events"), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.Equal(t, "completed#3", got.Item[table.AttrSweepPK].(*ddbtypes.AttributeValueMemberS).Value)
	require.Equal(t, map[string]ddbtypes.AttributeValue{"b": s("2")}, got.Item["m"].(*ddbtypes.AttributeValueMemberM).Value)

	// The GSI follows the overwrite.
	q, err := env.DynamoDB.Query(ctx, &dynamodb.QueryInput{
		TableName: tbl, IndexName: aws.String(table.IndexSweep),
		KeyConditionExpression:    aws.String("sweepPk = :p"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": s("pending#3")},
	})
	require.NoError(t, err)
	require.Empty(t, q.Items)
	q, err = env.DynamoDB.Query(ctx, &dynamodb.QueryInput{
		TableName: tbl, IndexName: aws.String(table.IndexSweep),
		KeyConditionExpression:    aws.String("sweepPk = :p"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": s("completed#3")},
	})
	require.NoError(t, err)
	require.Len(t, q.Items, 1)
}

func names(expr string) map[string]string {
	out := map[string]string{}
	if strings.Contains(expr, "#s") {
		out["#s"] = "status"
	}
	if strings.Contains(expr, "#p") {
		out["#p"] = "payload"
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func values(expr string) map[string]ddbtypes.AttributeValue {
	if strings.Contains(expr, ":v") {
		return map[string]ddbtypes.AttributeValue{":v": s("x")}
	}
	return nil
}

func TestDynamoTransactionCancellationReasons(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t)
	ctx := context.Background()
	tbl := aws.String(env.Resources.EventsTable)

	ledger := key("EVENT#e1", "LEDGER")
	_, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: ledger})
	require.NoError(t, err)

	_, err = env.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Put: &ddbtypes.Put{TableName: tbl, Item: key("EVENT#e1", "DISPATCH#a")}},
		{Put: &ddbtypes.Put{TableName: tbl, Item: ledger, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
	}})
	var tce *ddbtypes.TransactionCanceledException
	require.ErrorAs(t, err, &tce)
	require.Len(t, tce.CancellationReasons, 2)
	require.Equal(t, "None", aws.ToString(tce.CancellationReasons[0].Code))
	require.Equal(t, "ConditionalCheckFailed", aws.ToString(tce.CancellationReasons[1].Code))

	got, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: key("EVENT#e1", "DISPATCH#a"), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.Empty(t, got.Item)

	// A plain conditional put fails with the modelled exception.
	_, err = env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: ledger, ConditionExpression: aws.String("attribute_not_exists(pk)")})
	var ccf *ddbtypes.ConditionalCheckFailedException
	require.ErrorAs(t, err, &ccf)
}
