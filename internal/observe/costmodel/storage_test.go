package costmodel_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/observe/costmodel"
)

// Stored is what the items written since Reset take as they are now:
// each item and each index entry it has, with DynamoDB's 100 bytes of
// overhead each; an item deleted since takes nothing.
func TestStoredCountsItemsAndTheirIndexEntries(t *testing.T) {
	t.Parallel()
	k, env := newCallKit(t)
	k.meter.Peek = awslocal.NewDynamoDBClient(env.Emulators.Config(), env.Emulators.DynamoDBEndpoint)
	s := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
	put := func(item map[string]ddbtypes.AttributeValue) {
		_, err := k.ddb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(k.table), Item: item})
		require.NoError(t, err)
	}
	plain := map[string]ddbtypes.AttributeValue{"pk": s("EVENT#a"), "sk": s("LEDGER"), "payload": s("0123456789")}
	due := map[string]ddbtypes.AttributeValue{"pk": s("EVENT#a"), "sk": s("DISPATCH#t"), table.AttrDuePK: s("due#1"), table.AttrNextRetryAt: &ddbtypes.AttributeValueMemberN{Value: "17"}}
	gone := map[string]ddbtypes.AttributeValue{"pk": s("EVENT#b"), "sk": s("LEDGER")}
	k.meter.Reset()
	put(plain)
	put(due)
	put(gone)
	_, err := k.ddb.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(k.table), Key: gone})
	require.NoError(t, err)

	keysOnly := map[string]ddbtypes.AttributeValue{"pk": due["pk"], "sk": due["sk"], table.AttrDuePK: due[table.AttrDuePK], table.AttrNextRetryAt: due[table.AttrNextRetryAt]}
	want := float64(costmodel.ItemSize(plain) + 100 + costmodel.ItemSize(due) + 100 + costmodel.ItemSize(keysOnly) + 100)
	stored := k.meter.Stored(context.Background())
	require.InDelta(t, want, stored[table.Events.Name], 1e-9)

	months := costmodel.StorageGBMonths(map[string]float64{table.Events.Name: 1 << 30}, map[string]float64{table.Events.Name: 14})
	require.InDelta(t, 14/(730.0/24), months, 1e-12, "a GB kept 14 days")
	u := costmodel.Units{StorageGBMonths: 1, DataOutBytes: 1 << 30, StateTransitions: 1000, EMFBytes: 1 << 30}
	require.InDelta(t, 0.25+0.20+0.09+0.025+0.50, costmodel.USEast1.Total(u), 1e-9, "storage, PITR, data out, transitions, EMF as log ingestion")
}
