package costmodel

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/table"
)

func TestItemSize(t *testing.T) {
	t.Parallel()
	s := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
	n := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberN{Value: v} }
	for _, c := range []struct {
		name string
		item map[string]ddbtypes.AttributeValue
		want int
	}{
		{"string: name + UTF-8 bytes", map[string]ddbtypes.AttributeValue{"pk": s("héllo")}, 2 + 6},
		{"number: 1 byte per 2 significant digits + 1", map[string]ddbtypes.AttributeValue{"n": n("12345")}, 1 + 4},
		{"number: zeros trimmed", map[string]ddbtypes.AttributeValue{"n": n("1000.00")}, 1 + 2},
		{"number: zero", map[string]ddbtypes.AttributeValue{"n": n("0")}, 1 + 2},
		{"bool and null: 1 byte", map[string]ddbtypes.AttributeValue{"b": &ddbtypes.AttributeValueMemberBOOL{Value: true}, "z": &ddbtypes.AttributeValueMemberNULL{Value: true}}, 2 + 2},
		{"binary: its bytes", map[string]ddbtypes.AttributeValue{"bin": &ddbtypes.AttributeValueMemberB{Value: make([]byte, 100)}}, 3 + 100},
		{"list: 3 + 1 per element + elements", map[string]ddbtypes.AttributeValue{"l": &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{s("ab"), s("c")}}}, 1 + 3 + 1 + 2 + 1 + 1},
		{"map: 3 + 1 per element + names + values", map[string]ddbtypes.AttributeValue{"m": &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{"k": s("vv")}}}, 1 + 3 + 1 + 1 + 2},
		{"string set: its strings", map[string]ddbtypes.AttributeValue{"ss": &ddbtypes.AttributeValueMemberSS{Value: []string{"a", "bc"}}}, 2 + 3},
	} {
		require.Equal(t, c.want, ItemSize(c.item), c.name)
	}
}

func TestUnitRounding(t *testing.T) {
	t.Parallel()
	require.Equal(t, 1.0, writeUnits(0), "at least one")
	require.Equal(t, 1.0, writeUnits(1024))
	require.Equal(t, 2.0, writeUnits(1025))
	require.Equal(t, 1.0, readUnits(4096))
	require.Equal(t, 2.0, readUnits(4097))
	require.Equal(t, 1.0, chunks64K(64<<10))
	require.Equal(t, 2.0, chunks64K(64<<10+1))
	require.Equal(t, 1.0, APIRequestUnits(100))
	require.InDelta(t, 0.5*0.012, LambdaGBSeconds(512, 11.2), 1e-12, "rounded up to the millisecond")
}

// Index writes follow DynamoDB's rules: a put or delete when the item
// enters or leaves the index, an update when a projected attribute
// changes under the same key, a delete and a put when the key changes,
// nothing when nothing projected changed.
func TestIndexWrites(t *testing.T) {
	t.Parallel()
	def := table.Def{Name: "t", PK: table.Key{Name: "pk", Type: table.String}, Indexes: []table.Index{
		{Name: "ix", PK: table.Key{Name: "g", Type: table.String}, Projection: table.ProjectInclude, NonKey: []string{"p"}},
	}}
	item := func(kv ...string) map[string]ddbtypes.AttributeValue {
		m := map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "k"}}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = &ddbtypes.AttributeValueMemberS{Value: kv[i+1]}
		}
		return m
	}
	for _, c := range []struct {
		name     string
		old, now map[string]ddbtypes.AttributeValue
		want     float64
	}{
		{"enters", nil, item("g", "a"), 1},
		{"leaves", item("g", "a"), item(), 1},
		{"never in it", item(), item("x", "1"), 0},
		{"unprojected change", item("g", "a", "x", "1"), item("g", "a", "x", "2"), 0},
		{"projected change", item("g", "a", "p", "1"), item("g", "a", "p", "2"), 1},
		{"key change: delete + put", item("g", "a"), item("g", "b"), 2},
	} {
		require.Equal(t, c.want, indexWrites(def, c.old, c.now), c.name)
	}
}

func TestGrowthFlagsOnlyGrowth(t *testing.T) {
	t.Parallel()
	base := Report{Paths: []Path{{Name: "p", Requests: map[string]float64{"SQS.SendMessage": 1}, Units: Units{WRU: 10, SQSRequests: 2, LogBytes: 1000}}}}
	same := base
	require.Empty(t, Growth(base, same))
	less := Report{Paths: []Path{{Name: "p", Requests: map[string]float64{}, Units: Units{WRU: 5, SQSRequests: 1}}}}
	require.Empty(t, Growth(base, less), "less is fine")
	more := Report{Paths: []Path{
		{Name: "p", Requests: map[string]float64{"SQS.SendMessage": 2, "S3.PutObject": 1}, Units: Units{WRU: 12, SQSRequests: 3, LogBytes: 1200, LambdaGBSeconds: 9}},
		{Name: "new"},
	}}
	got := Growth(base, more)
	require.Len(t, got, 7, "%v", got)
	require.Contains(t, got[0], "new: a path with no committed figures")
}

// A listing's Query count per page moves with how its events fall over the
// tenant shards: within 15% it is noise, beyond it growth; every other
// call is counted exactly.
func TestGrowthLetsAListingsQueriesVaryAsItsShardsFill(t *testing.T) {
	t.Parallel()
	base := Report{Paths: []Path{{Name: "job-step", Requests: map[string]float64{"DynamoDB.Query": 5.33, "DynamoDB.GetItem": 1}}}}
	require.Empty(t, Growth(base, Report{Paths: []Path{{Name: "job-step", Requests: map[string]float64{"DynamoDB.Query": 6, "DynamoDB.GetItem": 1}}}}))
	require.Len(t, Growth(base, Report{Paths: []Path{{Name: "job-step", Requests: map[string]float64{"DynamoDB.Query": 6.5, "DynamoDB.GetItem": 1}}}}), 1)
	require.Len(t, Growth(base, Report{Paths: []Path{{Name: "job-step", Requests: map[string]float64{"DynamoDB.Query": 5.33, "DynamoDB.GetItem": 1.1}}}}), 1)
}

func TestPricesTotal(t *testing.T) {
	t.Parallel()
	u := Units{WRU: 1e6, SQSRequests: 1e6, APIRequests: 1e6}
	require.InDelta(t, 0.625+0.40+1.00, USEast1.Total(u), 1e-9)
	u.SQSFIFORequests = 1e6
	require.InDelta(t, 0.625+0.40+0.50+1.00, USEast1.Total(u), 1e-9, "a FIFO request costs more than a standard one")
	lines := USEast1.Dollars(u)
	require.Equal(t, "API Gateway", lines[0].Item, "largest first")
}

// A FIFO queue's requests are priced as FIFO requests, whatever the call.
func TestFIFOQueueCallsAreFIFORequests(t *testing.T) {
	t.Parallel()
	std, fifo := aws.String("https://sqs.us-east-1.amazonaws.com/1/evp-prod-crm-sync"), aws.String("https://sqs.us-east-1.amazonaws.com/1/evp-prod-billing-events.fifo")
	body := aws.String(strings.Repeat("x", 70<<10)) // two 64 KiB chunks
	for _, tc := range []struct {
		name string
		in   func(url *string) any
		want float64
	}{
		{"send", func(u *string) any { return &sqs.SendMessageInput{QueueUrl: u, MessageBody: body} }, 2},
		{"receive", func(u *string) any { return &sqs.ReceiveMessageInput{QueueUrl: u} }, 1},
		{"delete", func(u *string) any { return &sqs.DeleteMessageBatchInput{QueueUrl: u} }, 1},
		{"visibility", func(u *string) any { return &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: u} }, 1},
	} {
		require.Equal(t, Units{SQSRequests: tc.want}, callUnits(tc.in(std), nil), tc.name)
		require.Equal(t, Units{SQSFIFORequests: tc.want}, callUnits(tc.in(fifo), nil), tc.name)
	}
}

// A PartiQL write statement is priced on the item its WHERE clause names
// with parameters; anything else is not a write the meter can price.
func TestStatementKey(t *testing.T) {
	t.Parallel()
	m := NewMeter(nil, "evp-test")
	tbl := table.Events.PhysicalName("evp-test")
	pk, sk := &ddbtypes.AttributeValueMemberS{Value: "EVENT#a"}, &ddbtypes.AttributeValueMemberS{Value: "DISPATCH#t"}
	x := &ddbtypes.AttributeValueMemberS{Value: "x"}
	for _, tc := range []struct {
		name   string
		stmt   string
		params []ddbtypes.AttributeValue
		ok     bool
	}{
		{"quoted", `UPDATE "` + tbl + `" SET "status" = ? SET a = ? WHERE "pk" = ? AND "sk" = ? AND "status" <> ?`, []ddbtypes.AttributeValue{x, x, pk, sk, x}, true},
		{"bare", `update ` + tbl + ` SET a = ? WHERE sk = ? AND pk = ?`, []ddbtypes.AttributeValue{x, sk, pk}, true},
		{"delete", `DELETE FROM "` + tbl + `" WHERE "pk" = ? AND "sk" = ?`, []ddbtypes.AttributeValue{pk, sk}, true},
		{"select", `SELECT * FROM "` + tbl + `" WHERE "pk" = ? AND "sk" = ?`, []ddbtypes.AttributeValue{pk, sk}, false},
		{"other table", `UPDATE "nope" SET a = ? WHERE "pk" = ? AND "sk" = ?`, []ddbtypes.AttributeValue{x, pk, sk}, false},
		{"literal key", `UPDATE "` + tbl + `" SET a = ? WHERE "pk" = 'EVENT#a' AND "sk" = ?`, []ddbtypes.AttributeValue{x, sk}, false},
		{"missing parameter", `UPDATE "` + tbl + `" SET a = ? WHERE "pk" = ? AND "sk" = ?`, []ddbtypes.AttributeValue{x, pk}, false},
	} {
		gotTbl, key, ok := m.statementKey(tc.stmt, tc.params)
		require.Equal(t, tc.ok, ok, tc.name)
		if ok {
			require.Equal(t, tbl, gotTbl, tc.name)
			require.Equal(t, map[string]ddbtypes.AttributeValue{"pk": pk, "sk": sk}, key, tc.name)
		}
	}
}
