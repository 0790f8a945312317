package ingest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/kit/afterward"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// deferred collects the work Publish hands to Deps.Later, to run (or not:
// the environment died after the answer) when the test says.
type deferred struct {
	mu   sync.Mutex
	work []func(context.Context)
}

func (d *deferred) later(_ context.Context, w func(context.Context)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.work = append(d.work, w)
}

func (d *deferred) run() int {
	d.mu.Lock()
	work := d.work
	d.work = nil
	d.mu.Unlock()
	for _, w := range work {
		w(context.Background())
	}
	return len(work)
}

// A single publish answers "enqueued" once its messages are on their
// queues and records the sends after the answer: until then each row is
// pending under the publish's lease (no sweeper and no re-drive can take
// it); then it is enqueued, so a consumer lagging past the lease gets
// nothing sent again.
func TestPublishRecordsItsSendsAfterTheAnswer(t *testing.T) {
	t.Parallel()
	var later deferred
	b := setup(t, func(_ *ingest.Config, d *ingest.Deps) { d.Later = later.later })
	b.env.Calls.Reset()
	res := b.publish(t, inquiry("evt_later"))
	require.Equal(t, envelope.StatusEnqueued, res.Status)
	require.Equal(t, map[string]int{"DynamoDB.TransactWriteItems": 1, "SQS.SendMessage": 2}, b.env.Calls.Snapshot(), "the answer waits for the commit and the sends, not the marks")
	require.Len(t, b.drain(t, topology.Notifications), 1)
	for topic, row := range b.rows(t, "evt_later") {
		require.Equal(t, outbox.StatusPending, row.Status, topic)
		require.True(t, row.Leased(b.clock.Now()), topic)
	}

	require.Equal(t, 2, later.run())
	require.Equal(t, 2, b.env.Calls.Count("DynamoDB", "UpdateItem"))
	for topic, row := range b.rows(t, "evt_later") {
		require.Equal(t, outbox.StatusEnqueued, row.Status, topic)
	}
	due, err := b.events.Due(context.Background(), b.clock.Now().Add(b.cfg.Ingest.Lease+time.Hour), 50)
	require.NoError(t, err)
	for _, r := range due {
		require.NotEqual(t, "evt_later", r.EventID, "a consumer lagging past the lease gets nothing sent again")
	}
}

// An environment that dies after the answer and before the marks leaves
// its rows as a failed mark does: pending under the lease, then due for
// the sweeper (sent at most once more), and a duplicate inside the lease
// re-drives nothing.
func TestMarksLostAfterTheAnswerLeaveTheRowsDueAfterTheLease(t *testing.T) {
	t.Parallel()
	var later deferred
	b := setup(t, func(_ *ingest.Config, d *ingest.Deps) { d.Later = later.later })
	require.Equal(t, envelope.StatusEnqueued, b.publish(t, inquiry("evt_lost")).Status)
	// The work is dropped: the environment died.
	later.mu.Lock()
	later.work = nil
	later.mu.Unlock()

	dup := b.publish(t, inquiry("evt_lost"))
	require.Equal(t, envelope.StatusDuplicate, dup.Status)
	require.Equal(t, 0, later.run(), "inside the lease a duplicate sends nothing")

	ctx := context.Background()
	due, err := b.events.Due(ctx, b.clock.Now(), 50)
	require.NoError(t, err)
	require.Empty(t, due)
	due, err = b.events.Due(ctx, b.clock.Now().Add(b.cfg.Ingest.Lease+time.Second), 50)
	require.NoError(t, err)
	require.Len(t, due, 2, "after the lease the sweeper finds both rows")
}

// The Lambda wiring hands the marks to afterward.Go: inside an invocation
// with the afterward extension they run after the answer, outside one (a
// test, a caller without the extension) before Publish returns.
func TestTheWiringRecordsTheSendsThroughAfterward(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tasks := afterward.New()
	res, err := b.svc.Publish(afterward.With(context.Background(), tasks), inquiry("evt_afterward"))
	require.NoError(t, err)
	require.Equal(t, envelope.StatusEnqueued, res.Status)
	tasks.Wait()
	for topic, row := range b.rows(t, "evt_afterward") {
		require.Equal(t, outbox.StatusEnqueued, row.Status, topic)
	}
	require.Equal(t, envelope.StatusEnqueued, b.publish(t, inquiry("evt_inline")).Status)
	for topic, row := range b.rows(t, "evt_inline") {
		require.Equal(t, outbox.StatusEnqueued, row.Status, topic, "marked before Publish returned")
	}
}
