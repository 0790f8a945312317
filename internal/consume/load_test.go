package consume_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// Issue test 7: 5,000 messages, 10% of handler runs failing transiently at
// random, 5% of the events sent twice (as a sweeper re-send would), four
// concurrent pollers like an event source mapping: every event's side
// effect happens exactly once and nothing is lost.
func TestLoadEverySideEffectExactlyOnce(t *testing.T) {
	t.Parallel()
	const n = 5000
	b := setup(t, func(tp *topology.Topic) {
		// Random failures must never add up to a redrive here.
		tp.MaxReceiveCount = 50
	})
	ctx := context.Background()
	seedStart := time.Now()
	ids := b.seed(t, "evt_load", n)
	t.Logf("seeded in %s", time.Since(seedStart))
	resent := ids[:n/20]
	b.send(t, b.env.Emulators.SQS(), resent)
	// Short retry delays: the rare message failing several times in a row
	// must not stretch the run.
	b.rebuild(t, func(c *consume.Config, _ *consume.Deps) { c.Backoff.Cap = 2 * time.Second })
	b.handler.fail = func(consume.Message, int) error {
		if rand.Float64() < 0.1 {
			return errors.New("random transient failure")
		}
		return nil
	}

	var (
		wg       sync.WaitGroup
		idle     atomic.Int32
		errsMu   sync.Mutex
		errs     []error
		deadline = time.Now().Add(3 * time.Minute)
	)
	done := func() bool { return b.handler.distinct.Load() == n }
	for range 4 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				msgs := b.env.ReceiveAll(ctx, b.q.URL, 10, 0)
				if len(msgs) == 0 {
					if done() {
						idle.Add(1)
						return
					}
					time.Sleep(50 * time.Millisecond)
					continue
				}
				if _, err := b.tryInvoke(msgs); err != nil {
					errsMu.Lock()
					errs = append(errs, err)
					errsMu.Unlock()
				}
			}
		})
	}
	runStart := time.Now()
	wg.Wait()
	t.Logf("consumed in %s", time.Since(runStart))
	require.Empty(t, errs)
	calls, effects, _ := b.handler.counts()
	require.Len(t, effects, n, "every event was handled")
	for _, id := range ids {
		require.Equal(t, 1, effects[id], "side effect of %s", id)
	}
	failures := 0
	for _, c := range calls {
		failures += c - 1
	}
	require.Positive(t, failures, "the random failures happened")

	// Drain whatever copies are still on their way back (retried
	// duplicates): they must all be acknowledged as duplicates.
	for {
		visible, inflight := b.env.QueueDepth(ctx, b.q.URL)
		if visible+inflight == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline.Add(time.Minute)), "queue did not drain")
		if msgs := b.env.ReceiveAll(ctx, b.q.URL, 10, time.Second); len(msgs) > 0 {
			_, err := b.tryInvoke(msgs)
			require.NoError(t, err)
		}
	}
	_, effects, _ = b.handler.counts()
	for _, id := range ids {
		require.Equal(t, 1, effects[id], "side effect of %s after the drain", id)
	}
	require.Empty(t, b.env.ReceiveAll(ctx, b.q.DLQURL, 1, 0), "nothing dead-lettered")

	// Every outbox row is completed.
	statuses := map[string]int{}
	p := dynamodb.NewScanPaginator(b.env.Emulators.DynamoDB(), &dynamodb.ScanInput{TableName: aws.String(b.env.Resources.EventsTable)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		require.NoError(t, err)
		for _, it := range page.Items {
			if sk, _ := it["sk"].(*ddbtypes.AttributeValueMemberS); sk == nil || sk.Value == dynamo.LedgerSK {
				continue
			}
			s, _ := it["status"].(*ddbtypes.AttributeValueMemberS)
			require.NotNil(t, s)
			statuses[s.Value]++
		}
	}
	require.Equal(t, map[string]int{"completed": n}, statuses)
	lines := b.metrics.JSONLines(t)
	require.Equal(t, float64(n), sum(lines, consume.MetricProcessed))
	require.Equal(t, float64(len(resent)), sum(lines, consume.MetricDuplicate), "each re-sent copy was acknowledged as a duplicate")
	t.Logf("%d events, %d handler failures, %d duplicates", n, failures, len(resent))
}
