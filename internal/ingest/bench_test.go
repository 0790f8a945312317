package ingest_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// BenchmarkPublish measures the ingest handler against the emulators, next
// to the bare emulator operations it performs for the same event (one
// TransactWriteItems with the ledger item and its rows, one SendMessage and
// one UpdateItem per topic). ns/op and p50/p99 are the handler's;
// bare-p50-ms is the emulator floor; overhead-x = handler p50 / bare p50 is
// the part we own. aws-calls/event counts the handler's AWS API calls.
func BenchmarkPublish(b *testing.B) {
	cases := []struct {
		name   string
		typ    string
		source string
		topics []string
		dup    bool
	}{
		{"happy-1-topic", "content.published", "cms", []string{topology.CachePurge}, false},
		{"happy-2-topics", "inquiry.created", "storefront", []string{topology.Notifications, topology.CRM}, false},
		{"duplicate", "inquiry.created", "storefront", []string{topology.Notifications, topology.CRM}, true},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			bd := setup(b)
			ctx := context.Background()
			payload := map[string]any{"name": "Ada", "message": "a typical small payload of a few hundred bytes", "tags": []string{"tenant:acme", "tenant:acme:page:/"}}
			if tc.dup {
				if _, err := bd.svc.Publish(ctx, event("evt_dup", tc.typ, tc.source, payload)); err != nil {
					b.Fatal(err)
				}
			}
			handler := make([]time.Duration, 0, b.N)
			bare := make([]time.Duration, 0, b.N)
			bd.env.Calls.Reset()
			for i := 0; b.Loop(); i++ {
				id := fmt.Sprintf("evt_%s_%d", tc.name, i)
				if tc.dup {
					id = "evt_dup"
				}
				raw := event(id, tc.typ, tc.source, payload)
				start := time.Now()
				res, err := bd.svc.Publish(ctx, raw)
				handler = append(handler, time.Since(start))
				if err != nil || res.Status == envelope.StatusRejected || res.Status == envelope.StatusAccepted {
					b.Fatalf("publish: %v %+v", err, res)
				}
				b.StopTimer()
				if !tc.dup {
					bare = append(bare, bd.bareOps(b, i, tc.topics))
					bd.cleanup(b, id, tc.topics)
				}
				b.StartTimer()
			}
			calls := bd.env.Calls.Total()
			b.ReportMetric(float64(calls)/float64(len(handler)), "aws-calls/event")
			b.ReportMetric(ms(pct(handler, 50)), "p50-ms")
			b.ReportMetric(ms(pct(handler, 99)), "p99-ms")
			if len(bare) > 0 {
				b.ReportMetric(ms(pct(bare, 50)), "bare-p50-ms")
				b.ReportMetric(ms(pct(bare, 99)), "bare-p99-ms")
				b.ReportMetric(float64(pct(handler, 50))/float64(pct(bare, 50)), "overhead-x")
			}
		})
	}
}

// bareOps performs, with raw SDK calls, the same emulator work a
// first-seen publish does, and returns how long it took.
func (bd *bundle) bareOps(b *testing.B, i int, topics []string) time.Duration {
	ctx := context.Background()
	ddb := bd.env.Emulators.DynamoDB()
	q := bd.env.Emulators.SQS()
	id := fmt.Sprintf("bare_%d", i)
	items := []ddbtypes.TransactWriteItem{put(bd.cfg.EventsTable, map[string]any{"pk": dynamo.EventPK(id), "sk": dynamo.LedgerSK, "payload": `{"name":"Ada"}`, "tenantId": "acme"})}
	for _, tp := range topics {
		items = append(items, put(bd.cfg.EventsTable, map[string]any{"pk": dynamo.EventPK(id), "sk": dynamo.DispatchSK(tp), "status": "pending", "duePk": "due#0", "nextRetryAt": 1}))
	}
	start := time.Now()
	if _, err := ddb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items}); err != nil {
		b.Fatal(err)
	}
	for _, tp := range topics {
		if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(bd.queueURL(tp)), MessageBody: aws.String(`{"id":"` + id + `"}`)}); err != nil {
			b.Fatal(err)
		}
		if _, err := ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(bd.cfg.EventsTable),
			Key: map[string]ddbtypes.AttributeValue{
				"pk": &ddbtypes.AttributeValueMemberS{Value: dynamo.EventPK(id)},
				"sk": &ddbtypes.AttributeValueMemberS{Value: dynamo.DispatchSK(tp)},
			},
			UpdateExpression:          aws.String("SET #s = :e"),
			ExpressionAttributeNames:  map[string]string{"#s": "status"},
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":e": &ddbtypes.AttributeValueMemberS{Value: "enqueued"}},
		}); err != nil {
			b.Fatal(err)
		}
	}
	d := time.Since(start)
	bd.cleanup(b, id, topics)
	return d
}

func put(tableName string, item map[string]any) ddbtypes.TransactWriteItem {
	av, err := attributevalue.MarshalMap(item)
	if err != nil {
		panic(err)
	}
	return ddbtypes.TransactWriteItem{Put: &ddbtypes.Put{TableName: aws.String(tableName), Item: av, ConditionExpression: aws.String("attribute_not_exists(pk)")}}
}

// cleanup deletes an event's items (with a client outside the call
// counter): minidyn's transactions slow down as a table grows, and a
// benchmark should measure a steady state, not table growth.
func (bd *bundle) cleanup(b *testing.B, id string, topics []string) {
	ctx := context.Background()
	ddb := bd.env.Emulators.DynamoDB()
	for _, sk := range append([]string{dynamo.LedgerSK}, dispatchSKs(topics)...) {
		if _, err := ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: aws.String(bd.cfg.EventsTable),
			Key: map[string]ddbtypes.AttributeValue{
				"pk": &ddbtypes.AttributeValueMemberS{Value: dynamo.EventPK(id)},
				"sk": &ddbtypes.AttributeValueMemberS{Value: sk},
			},
		}); err != nil {
			b.Fatal(err)
		}
	}
}

func dispatchSKs(topics []string) []string {
	out := make([]string, len(topics))
	for i, tp := range topics {
		out[i] = dynamo.DispatchSK(tp)
	}
	return out
}

func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
