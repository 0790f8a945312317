package outboxsweep_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/outbox"
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

// BenchmarkSweepLaggingRows: 200 due rows per op whose consumer lags past
// the dispatch lease (enqueued, message on its queue), which a run takes
// out of the due index one conditional UpdateItem each, every UpdateItem
// held 5 ms longer (about an in-region DynamoDB write; the emulators
// answer in well under that). rows/s is how fast a run gets through them:
// what bounds a topic whose consumer lags (a paused subscriber, a backlog)
// before the sweeper, which takes due rows oldest first, reaches the
// stranded sends of every topic behind them.
func BenchmarkSweepLaggingRows(b *testing.B) {
	const rows = 200
	bd := setup(b)
	ctx := context.Background()
	slow := dynamodb.New(bd.env.DynamoDB.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("latency", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if _, ok := in.Parameters.(*dynamodb.UpdateItemInput); ok {
					time.Sleep(5 * time.Millisecond)
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
		})
	})
	s := bd.sweeperOn(&dynamo.Events{Client: slow, Table: bd.events.Table})
	unindexed := 0
	var elapsed time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		ids := make([]string, rows)
		for j := range ids {
			ids[j] = fmt.Sprintf("evt_lag%d_%d", i, j)
			bd.strand(b, ids[j], t0.Add(-time.Minute))
			if err := bd.events.MarkEnqueued(ctx, outbox.RowRef{Key: ids[j], Topic: topic}, "ingest-died", t0); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		start := time.Now()
		rep, err := s.Run(ctx, time.Now().Add(time.Minute))
		elapsed += time.Since(start)
		b.StopTimer()
		if err != nil || rep.Unindexed != rows {
			b.Fatalf("run: %v %+v", err, rep)
		}
		unindexed += rep.Unindexed
		for _, id := range ids {
			for _, sk := range []string{dynamo.LedgerSK, dynamo.DispatchSK(topic)} {
				_, _ = bd.env.DynamoDB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(bd.events.Table), Key: map[string]ddbtypes.AttributeValue{
					"pk": &ddbtypes.AttributeValueMemberS{Value: dynamo.EventPK(id)}, "sk": &ddbtypes.AttributeValueMemberS{Value: sk},
				}})
			}
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(unindexed)/elapsed.Seconds(), "rows/s")
}
