package outboxsweep_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
)

// BenchmarkSweepBacklog sweeps a backlog of 50 stranded rows per op (the
// ingest calls died after their commit): ns/op is one run draining it.
// aws-calls/row counts every AWS call of the run (16 index queries, one
// BatchGetItem per round, and per row a conditional claim, the send and
// the enqueued mark), rows/s the drain rate against the emulators.
func BenchmarkSweepBacklog(b *testing.B) {
	const rows = 50
	bd := setup(b)
	ctx := context.Background()
	s := bd.sweeper(0, 0)
	calls, swept := 0, 0
	var elapsed time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		ids := make([]string, rows)
		for j := range ids {
			ids[j] = fmt.Sprintf("evt_b%d_%d", i, j)
			bd.strand(b, ids[j], t0.Add(-time.Minute))
		}
		bd.env.Calls.Reset()
		b.StartTimer()
		start := time.Now()
		rep, err := s.Run(ctx, time.Now().Add(time.Minute))
		elapsed += time.Since(start)
		b.StopTimer()
		if err != nil || rep.Sent != rows {
			b.Fatalf("run: %v %+v", err, rep)
		}
		calls += bd.env.Calls.Total()
		swept += rep.Sent
		// Keep the emulator's tables small: its transactions slow down as
		// they grow.
		bd.env.ReceiveAll(ctx, bd.env.Queue(topic).URL, 0, 0)
		for _, id := range ids {
			for _, sk := range []string{dynamo.LedgerSK, dynamo.DispatchSK(topic)} {
				_, _ = bd.env.DynamoDB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(bd.events.Table), Key: map[string]ddbtypes.AttributeValue{
					"pk": &ddbtypes.AttributeValueMemberS{Value: dynamo.EventPK(id)}, "sk": &ddbtypes.AttributeValueMemberS{Value: sk},
				}})
			}
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(calls)/float64(swept), "aws-calls/row")
	b.ReportMetric(float64(swept)/elapsed.Seconds(), "rows/s")
}
