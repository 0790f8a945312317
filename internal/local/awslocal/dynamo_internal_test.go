package awslocal

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
	"github.com/truora/minidyn/server"

	"github.com/siteswarm/eventplatform/internal/aws/table"
)

func TestTopLevelRemoves(t *testing.T) {
	t.Parallel()
	for expr, want := range map[string][]string{
		"SET a = :a":                            nil,
		"REMOVE a":                              {"a"},
		"remove #a, b":                          {"#a", "b"},
		"SET x = :x REMOVE y ADD n :one":        {"y"},
		"REMOVE m.k, l[0]":                      nil,
		"REMOVE m.k, top SET #remove = :remove": {"top"},
		"SET #r = :r, a.remove = :x":            nil,
		"DELETE s :v REMOVE\n\tz":               {"z"},
		"SET a = list_append(a, :l) REMOVE b":   {"b"},
		"":                                      nil,
	} {
		require.Equal(t, want, topLevelRemoves(expr), expr)
	}
}

func TestItemSize(t *testing.T) {
	t.Parallel()
	item := map[string]any{
		"s":  map[string]any{"S": "héllo"},                                       // 1 + 6
		"n":  map[string]any{"N": "-00123.4500"},                                 // 1 + (5 digits -> 3) + 1
		"b":  map[string]any{"B": "AAEC"},                                        // 1 + 3
		"t":  map[string]any{"BOOL": true},                                       // 1 + 1
		"z":  map[string]any{"NULL": true},                                       // 1 + 1
		"ss": map[string]any{"SS": []any{"ab", "c"}},                             // 2 + 3
		"l":  map[string]any{"L": []any{map[string]any{"S": "x"}}},               // 1 + 3 + (1+1)
		"m":  map[string]any{"M": map[string]any{"k": map[string]any{"N": "7"}}}, // 1 + 3 + (1 + 2 + 1)
	}
	require.Equal(t, 7+5+4+2+2+5+6+8, ItemSize(item))
	require.Equal(t, 2, numberSize("0"))
	require.Equal(t, 20, numberSize("1"+strings.Repeat("1", 37))) // 38 digits: 19 + 1
}

// TestMinidynIgnoresTopLevelRemove pins the minidyn bug the wrapper guards
// against, straight against minidyn: if this starts failing, minidyn fixed
// it and the REMOVE rejection can be reconsidered.
func TestMinidynIgnoresTopLevelRemove(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(server.NewServer())
	defer srv.Close()
	db := NewDynamoDBClient(NewConfig(), srv.URL)
	ctx := context.Background()
	_, err := db.CreateTable(ctx, CreateTableInput(table.Purge, "raw"))
	require.NoError(t, err)
	k := map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "p"}, "sk": &ddbtypes.AttributeValueMemberS{Value: "s"}}
	item := map[string]ddbtypes.AttributeValue{"pk": k["pk"], "sk": k["sk"], "gone": &ddbtypes.AttributeValueMemberS{Value: "x"}}
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("raw"), Item: item})
	require.NoError(t, err)
	_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("raw"), Key: k, UpdateExpression: aws.String("REMOVE gone")})
	require.NoError(t, err)
	got, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("raw"), Key: k})
	require.NoError(t, err)
	require.Contains(t, got.Item, "gone", "minidyn still ignores a top-level REMOVE")
}
