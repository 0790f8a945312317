package outboxsweep_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/outboxsweep"
)

// The due index projects keys only, so the sweeper reads a page's rows
// after the index: rows another sender took between the two (an
// overlapping sweeper run, an ingest re-drive) are left out, and a page
// can come back empty while its partition goes on. The run must read on:
// before, the merge took an empty page for the end of every partition,
// reported the run drained and left the due rows behind it for the next
// run (two minutes later, and again whenever the race repeats).
func TestARunReadsPastAPageWhoseRowsMovedOn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Three events in one due partition: two due first, then a third.
	ids := sameShard(t, 3)
	b.strand(t, ids[0], t0.Add(-3*time.Minute))
	b.strand(t, ids[1], t0.Add(-2*time.Minute))
	b.strand(t, ids[2], t0.Add(-time.Minute))

	// Between the index page naming the first two and the read of their
	// rows, another sender claims them.
	var raced atomic.Bool
	other := b.env.Events()
	client := dynamodb.New(b.env.DynamoDB.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("race", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if _, ok := in.Parameters.(*dynamodb.BatchGetItemInput); ok && raced.CompareAndSwap(false, true) {
					for _, id := range ids[:2] {
						ok, err := other.Claim(ctx, outbox.ClaimParams{Row: outbox.RowRef{Key: id, Topic: topic}, Owner: "other-sweeper", Now: t0, Lease: time.Minute})
						if err != nil || !ok {
							return middleware.InitializeOutput{}, middleware.Metadata{}, fmt.Errorf("race claim %s: %v %v", id, ok, err)
						}
					}
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
		})
	})
	s := b.sweeperWith(outboxsweep.Config{PageSize: 2}, &dynamo.Events{Client: client, Table: b.env.Resources.EventsTable})

	rep := run(t, s)
	require.True(t, raced.Load(), "the race happened")
	require.Equal(t, 1, rep.Sent, "the row behind the moved-on page is sent: %+v", rep)
	require.Equal(t, map[string]int{ids[2]: 1}, b.received(t))
	require.Equal(t, outbox.StatusEnqueued, b.row(t, ids[2]).Status)
}

// sameShard returns n event ids whose billing rows share a due partition.
func sameShard(t *testing.T, n int) []string {
	t.Helper()
	byShard := map[int][]string{}
	for i := 0; ; i++ {
		id := fmt.Sprintf("evt_race_%d", i)
		s := table.Shard(id, topic)
		byShard[s] = append(byShard[s], id)
		if len(byShard[s]) == n {
			return byShard[s]
		}
	}
}
