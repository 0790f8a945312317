package awslocal_test

import (
	"context"
	"errors"
	"fmt"
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
	// Every index the table definition names, keyed as it says (the
	// definition is what the CDK app deploys too).
	var want, got []string
	keys := map[string]bool{table.AttrPK: true, table.AttrSK: true}
	for _, ix := range table.Events.Indexes {
		want = append(want, ix.Name)
		keys[ix.PK.Name] = true
		if ix.SK != nil {
			keys[ix.SK.Name] = true
		}
	}
	for _, g := range events.Table.GlobalSecondaryIndexes {
		got = append(got, aws.ToString(g.IndexName))
	}
	require.ElementsMatch(t, want, got)
	require.Equal(t, ddbtypes.BillingModePayPerRequest, events.Table.BillingModeSummary.BillingMode)
	require.Len(t, events.Table.AttributeDefinitions, len(keys)) // pk, sk and the indexes' keys

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

// TestDynamoTopLevelRemoveLeavesTheIndex: a top-level REMOVE takes the
// attribute off the item and the item out of the sparse index keyed on it,
// as on DynamoDB (minidyn alone ignores it: the wrapper completes it), in
// UpdateItem and in a transaction; a refused condition removes nothing.
func TestDynamoTopLevelRemoveLeavesTheIndex(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t)
	ctx := context.Background()
	tbl := aws.String(env.Resources.EventsTable)
	inIndex := func(partition string) int {
		t.Helper()
		q, err := env.DynamoDB.Query(ctx, &dynamodb.QueryInput{
			TableName: tbl, IndexName: aws.String(table.IndexSweep),
			KeyConditionExpression:    aws.String("sweepPk = :p"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": s(partition)},
		})
		require.NoError(t, err)
		return len(q.Items)
	}
	get := func(sk string) map[string]ddbtypes.AttributeValue {
		t.Helper()
		got, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: key("EVENT#1", sk), ConsistentRead: aws.Bool(true)})
		require.NoError(t, err)
		return got.Item
	}
	for _, sk := range []string{"DISPATCH#a", "DISPATCH#b"} {
		row := key("EVENT#1", sk)
		row[table.AttrSweepPK] = s("pending#3")
		row[table.AttrNextRetryAt] = &ddbtypes.AttributeValueMemberN{Value: "1000"}
		row["status"] = s("pending")
		row["m"] = &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{"a": s("1"), "b": s("2")}}
		_, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: row})
		require.NoError(t, err)
	}
	require.Equal(t, 2, inIndex("pending#3"))

	// A refused condition changes nothing.
	_, err := env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: tbl, Key: key("EVENT#1", "DISPATCH#a"),
		UpdateExpression:          aws.String("SET #s = :v REMOVE sweepPk"),
		ConditionExpression:       aws.String("#s = :v"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":v": s("completed")},
	})
	requireAPIError(t, err, "ConditionalCheckFailedException")
	require.Contains(t, get("DISPATCH#a"), table.AttrSweepPK)
	require.Equal(t, 2, inIndex("pending#3"))

	out, err := env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: tbl, Key: key("EVENT#1", "DISPATCH#a"),
		UpdateExpression:          aws.String("SET #s = :v REMOVE #sp, m.a"),
		ConditionExpression:       aws.String("#s = :pending"),
		ExpressionAttributeNames:  map[string]string{"#s": "status", "#sp": table.AttrSweepPK},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":v": s("completed"), ":pending": s("pending")},
		ReturnValues:              ddbtypes.ReturnValueAllNew,
	})
	require.NoError(t, err)
	require.NotContains(t, out.Attributes, table.AttrSweepPK, "the new image returned")
	item := get("DISPATCH#a")
	require.NotContains(t, item, table.AttrSweepPK)
	require.Equal(t, "completed", item["status"].(*ddbtypes.AttributeValueMemberS).Value)
	require.Equal(t, map[string]ddbtypes.AttributeValue{"b": s("2")}, item["m"].(*ddbtypes.AttributeValueMemberM).Value, "a nested REMOVE")
	require.Equal(t, 1, inIndex("pending#3"))

	_, err = env.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{{
		Update: &ddbtypes.Update{TableName: tbl, Key: key("EVENT#1", "DISPATCH#b"), UpdateExpression: aws.String("SET #s = :v REMOVE sweepPk"),
			ExpressionAttributeNames:  map[string]string{"#s": "status"},
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":v": s("enqueued")}},
	}}})
	require.NoError(t, err)
	require.NotContains(t, get("DISPATCH#b"), table.AttrSweepPK)
	require.Equal(t, 0, inIndex("pending#3"))

	// And SET puts it back in.
	_, err = env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: tbl, Key: key("EVENT#1", "DISPATCH#b"),
		UpdateExpression:          aws.String("SET sweepPk = :p"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": s("processing#3")},
	})
	require.NoError(t, err)
	require.Equal(t, 1, inIndex("processing#3"))
}

// TestDynamoQueryResumesWhereItsStartWas: a query page's LastEvaluatedKey
// is a position, as on DynamoDB, even when the item it names has left the
// index before the next page is read (the sweeper pages through rows and
// moves them out of the sparse index as it goes).
func TestDynamoQueryResumesWhereItsStartWas(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t)
	ctx := context.Background()
	tbl := aws.String(env.Resources.EventsTable)
	for i, sk := range []string{"DISPATCH#a", "DISPATCH#b", "DISPATCH#c"} {
		row := key("EVENT#q", sk)
		row[table.AttrSweepPK] = s("failed#1")
		row[table.AttrNextRetryAt] = &ddbtypes.AttributeValueMemberN{Value: fmt.Sprint(1000 + i)}
		_, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: row})
		require.NoError(t, err)
	}
	page := func(start map[string]ddbtypes.AttributeValue) *dynamodb.QueryOutput {
		t.Helper()
		out, err := env.DynamoDB.Query(ctx, &dynamodb.QueryInput{
			TableName: tbl, IndexName: aws.String(table.IndexSweep), Limit: aws.Int32(1),
			KeyConditionExpression:    aws.String("sweepPk = :p"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": s("failed#1")},
			ExclusiveStartKey:         start,
		})
		require.NoError(t, err)
		return out
	}
	var seen []string
	var start map[string]ddbtypes.AttributeValue
	for range 5 {
		out := page(start)
		if len(out.Items) == 0 {
			break
		}
		require.Len(t, out.Items, 1)
		sk := out.Items[0][table.AttrSK].(*ddbtypes.AttributeValueMemberS).Value
		seen = append(seen, sk)
		// The row read moves on in the index (a sweeper's claim pushes its
		// nextRetryAt out), then leaves it, before the next page.
		_, err := env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: tbl, Key: key("EVENT#q", sk), UpdateExpression: aws.String("SET nextRetryAt = :later"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":later": &ddbtypes.AttributeValueMemberN{Value: "9999"}},
		})
		require.NoError(t, err)
		_, err = env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: tbl, Key: key("EVENT#q", sk), UpdateExpression: aws.String("REMOVE sweepPk"),
		})
		require.NoError(t, err)
		if start = out.LastEvaluatedKey; len(start) == 0 {
			break
		}
	}
	require.Equal(t, []string{"DISPATCH#a", "DISPATCH#b", "DISPATCH#c"}, seen)
	for _, sk := range seen {
		got, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: key("EVENT#q", sk), ConsistentRead: aws.Bool(true)})
		require.NoError(t, err)
		require.NotContains(t, got.Item, table.AttrSweepPK, "the resumed query put nothing back")
	}
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

// TestDynamoIndexFollowsItemsInAndOut: an item that enters an index through
// an update (a dispatch row a consumer claims after it left the sparse
// sweeper index), one created by an update, one put without its index key
// and one deleted each move only their own entry; every other entry of the
// index is still found, in order. minidyn v0.8.2 replaced the index's first
// entry when an item entered it through an update, after which the
// sweeper of the local stack found no pending or failed row at all
// (third_party/minidyn/PATCHES.md).
func TestDynamoIndexFollowsItemsInAndOut(t *testing.T) {
	t.Parallel()
	for name, emu := range map[string]func(testing.TB) *awslocal.Emulators{
		"embedded": awslocaltest.Shared, "dynamodb-local": awslocaltest.SharedDynamoDBLocal,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := awslocaltest.NewEnv(t, awslocaltest.WithEmulators(emu(t)))
			ctx := context.Background()
			tbl := aws.String(env.Resources.EventsTable)
			n := func(v int) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberN{Value: fmt.Sprint(v)} }
			put := func(sk string, partition string, next int) {
				t.Helper()
				row := key("EVENT#io", sk)
				row[table.AttrNextRetryAt] = n(next)
				if partition != "" {
					row[table.AttrSweepPK] = s(partition)
				}
				_, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: row})
				require.NoError(t, err)
			}
			enter := func(sk string, partition string) {
				t.Helper()
				_, err := env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
					TableName: tbl, Key: key("EVENT#io", sk), UpdateExpression: aws.String("SET sweepPk = :p, nextRetryAt = if_not_exists(nextRetryAt, :n)"),
					ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": s(partition), ":n": n(400)},
				})
				require.NoError(t, err)
			}
			inIndex := func(partition string) []string {
				t.Helper()
				var sks []string
				var start map[string]ddbtypes.AttributeValue
				for {
					q, err := env.DynamoDB.Query(ctx, &dynamodb.QueryInput{
						TableName: tbl, IndexName: aws.String(table.IndexSweep), Limit: aws.Int32(2), ExclusiveStartKey: start,
						KeyConditionExpression:    aws.String("sweepPk = :p"),
						ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": s(partition)},
					})
					require.NoError(t, err)
					for _, it := range q.Items {
						sks = append(sks, it[table.AttrSK].(*ddbtypes.AttributeValueMemberS).Value)
					}
					if start = q.LastEvaluatedKey; len(start) == 0 {
						return sks
					}
				}
			}
			// "failed#1" sorts before "pending#1": the first entry of the
			// whole index is the one upstream minidyn dropped. Sort keys
			// have the same number of digits: minidyn orders numbers as
			// strings (nextRetryAt is always 13 digits of milliseconds).
			put("DISPATCH#a", "failed#1", 500)
			put("DISPATCH#b", "failed#1", 600)
			put("DISPATCH#c", "pending#1", 500)
			put("DISPATCH#d", "", 700)
			put("DISPATCH#e", "failed#1", 600) // same index key as b

			enter("DISPATCH#d", "failed#1") // an existing item enters
			require.Equal(t, []string{"DISPATCH#a", "DISPATCH#b", "DISPATCH#e", "DISPATCH#d"}, inIndex("failed#1"))
			require.Equal(t, []string{"DISPATCH#c"}, inIndex("pending#1"))

			enter("DISPATCH#f", "failed#1") // an update creates an item in the index
			require.Equal(t, []string{"DISPATCH#f", "DISPATCH#a", "DISPATCH#b", "DISPATCH#e", "DISPATCH#d"}, inIndex("failed#1"))

			put("DISPATCH#b", "", 600) // a put without the index key leaves it
			_, err := env.DynamoDB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: tbl, Key: key("EVENT#io", "DISPATCH#a")})
			require.NoError(t, err)
			_, err = env.DynamoDB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: tbl, Key: key("EVENT#io", "DISPATCH#b")}) // out of the index already
			require.NoError(t, err)
			require.Equal(t, []string{"DISPATCH#f", "DISPATCH#e", "DISPATCH#d"}, inIndex("failed#1"))
			require.Equal(t, []string{"DISPATCH#c"}, inIndex("pending#1"))

			enter("DISPATCH#c", "failed#1") // moves between partitions
			require.Equal(t, []string{"DISPATCH#f", "DISPATCH#c", "DISPATCH#e", "DISPATCH#d"}, inIndex("failed#1"))
			require.Empty(t, inIndex("pending#1"))
		})
	}
}
