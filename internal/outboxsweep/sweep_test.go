package outboxsweep_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/s3blob"
	"github.com/siteswarm/eventplatform/internal/aws/sqsqueue"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/outboxsweep"
	"github.com/siteswarm/eventplatform/internal/topology"
)

var t0 = testkit.T0

type bundle struct {
	env       *awslocaltest.Env
	events    *dynamo.Events
	incidents *dynamo.Incidents
	clock     *testkit.Clock
	metrics   *testkit.Buffer
	tb        testing.TB
}

// topic is billing.events, a FIFO topic: a resend carries its event's
// message group and deduplication id.
const topic = topology.Billing

func setup(t testing.TB) *bundle {
	t.Helper()
	env := awslocaltest.NewEnv(t)
	b := &bundle{
		env:       env,
		events:    env.Events(),
		incidents: env.Incidents(),
		clock:     &testkit.Clock{},
		metrics:   &testkit.Buffer{},
		tb:        t,
	}
	b.clock.Set(t0)
	return b
}

// sweeper builds a sweeper; small pages force the drain to page (0: the
// defaults).
func (b *bundle) sweeper(page, batch int) *outboxsweep.Sweeper {
	b.tb.Helper()
	return b.sweeperWith(outboxsweep.Config{PageSize: page, BatchSize: batch}, b.events)
}

// sweeperOn builds a sweeper with the defaults on rows (a client of its
// own: test middleware).
func (b *bundle) sweeperOn(rows *dynamo.Events) *outboxsweep.Sweeper {
	b.tb.Helper()
	return b.sweeperWith(outboxsweep.Config{}, rows)
}

func (b *bundle) sweeperWith(cfg outboxsweep.Config, rows *dynamo.Events) *outboxsweep.Sweeper {
	b.tb.Helper()
	store := &s3blob.S3{Client: b.env.S3}
	s, err := outboxsweep.New(cfg, outboxsweep.Deps{
		Rows:      rows,
		Abandoner: &dynamo.Recovery{Events: rows, Incidents: b.incidents},
		Incidents: b.incidents,
		Sender:    &sqsqueue.Sender{Client: b.env.SQS, URLs: b.env.Resources.QueueURLs(), FIFO: b.env.Topology.FIFOTopics()},
		Bodies:    &incident.Bodies{Store: store, Bucket: b.env.Resources.Bucket},
		Metrics:   &metric.Emitter{W: b.metrics},
		Now:       b.clock.Now,
	})
	require.NoError(b.tb, err)
	return s
}

// strand commits an event whose dispatch rows are pending with the given
// lease expiry, as if the ingest call died after its commit.
func (b *bundle) strand(t testing.TB, id string, leaseUntil time.Time) {
	t.Helper()
	b.strandBy(t, id, "ingest-died", leaseUntil)
}

// strandBy is strand with the rows held by owner.
func (b *bundle) strandBy(t testing.TB, id, owner string, leaseUntil time.Time) {
	t.Helper()
	rec := ledger.Record{
		Key: id,
		Event: envelope.Event{SchemaVersion: 1, ID: id, TenantID: "acme", Type: "stripe.invoice.paid", Source: "stripe",
			Timestamp: t0, Payload: json.RawMessage(`{"invoice":"` + id + `"}`)},
		Topics: []string{topic}, PayloadHash: "h", Status: ledger.StatusReceived, CreatedAt: t0, ExpiresAt: t0.Add(14 * 24 * time.Hour),
		OrderingKey: "cus_" + id,
	}
	row := outbox.Row{Key: id, EventID: id, Topic: topic, TenantID: "acme", Type: rec.Event.Type, Status: outbox.StatusPending, MaxAttempts: 5,
		NextRetryAt: leaseUntil, LeaseUntil: leaseUntil, LeaseOwner: owner, CreatedAt: t0, UpdatedAt: t0}
	require.NoError(t, b.events.Commit(context.Background(), ingest.CommitParams{Record: rec, Rows: []outbox.Row{row}}))
}

func (b *bundle) row(t *testing.T, id string) outbox.Row {
	t.Helper()
	_, rows, err := b.events.Load(context.Background(), id)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	return rows[0]
}

// received drains the topic queue and counts messages per event id; each
// is in its event's message group (the tenant's customer).
func (b *bundle) received(t *testing.T) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for _, m := range b.env.ReceiveAll(context.Background(), b.env.Queue(topic).URL, 0, 0) {
		id := aws.ToString(m.MessageAttributes[outbox.AttrEventID].StringValue)
		counts[id]++
		require.Equal(t, "acme/cus_"+id, m.Attributes["MessageGroupId"], id)
	}
	return counts
}

func run(t *testing.T, s *outboxsweep.Sweeper) outboxsweep.Report {
	t.Helper()
	rep, err := s.Run(context.Background(), time.Now().Add(time.Minute))
	require.NoError(t, err)
	return rep
}

func TestSweeperSendsStrandedRowAndLeavesLeasedRowAlone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.strand(t, "evt_stranded", t0.Add(-time.Minute)) // ingest died, lease ran out
	b.strand(t, "evt_leased", t0.Add(10*time.Minute)) // a sender still holds it

	rep := run(t, b.sweeper(0, 0))
	require.Equal(t, 1, rep.Due)
	require.Equal(t, 1, rep.Sent)
	require.True(t, rep.Drained)
	require.Equal(t, map[string]int{"evt_stranded": 1}, b.received(t))
	require.Equal(t, outbox.StatusEnqueued, b.row(t, "evt_stranded").Status)

	leased := b.row(t, "evt_leased")
	require.Equal(t, outbox.StatusPending, leased.Status)
	require.Equal(t, "ingest-died", leased.LeaseOwner, "the lease holder keeps its row")

	var line map[string]any
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(b.metrics.String())), &line))
	require.EqualValues(t, 1, line[outboxsweep.MetricDue])
	require.EqualValues(t, 1, line[outboxsweep.MetricSent])
	require.EqualValues(t, 60, line[outboxsweep.MetricLag], "the oldest due row was due a minute ago")
}

func TestSweeperBacksOffThenAbandonsAfterFiveAttempts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	b.strand(t, "evt_doomed", t0.Add(-time.Second))
	b.env.Faults.Add(awslocal.Fault{Service: "SQS", Operation: "SendMessage", Resource: b.env.Queue(topic).URL})
	s := b.sweeper(0, 0)

	for attempt := 1; attempt <= 4; attempt++ {
		rep := run(t, s)
		require.Equal(t, 1, rep.Failed, "attempt %d", attempt)
		require.Zero(t, rep.Abandoned)
		r := b.row(t, "evt_doomed")
		require.Equal(t, outbox.StatusFailed, r.Status)
		require.Equal(t, attempt, r.Attempts)
		require.Contains(t, r.LastError, "InternalError")
		require.Equal(t, b.clock.Now().Add(outboxsweep.Backoff(outboxsweep.DefaultBackoffBase, attempt)), r.NextRetryAt, "backoff 2·2^attempts minutes")

		// Not due again until the backoff has passed.
		b.clock.Set(r.NextRetryAt.Add(-time.Second))
		require.Zero(t, run(t, s).Due)
		b.clock.Set(r.NextRetryAt)
	}
	rep := run(t, s)
	require.Equal(t, 1, rep.Abandoned)
	r := b.row(t, "evt_doomed")
	require.Equal(t, outbox.StatusDLQAbandoned, r.Status)
	require.Equal(t, 5, r.Attempts)

	inc, err := b.incidents.Get(ctx, incident.ID("evt_doomed", topic))
	require.NoError(t, err)
	require.Equal(t, incident.StatusOpen, inc.Status)
	require.Equal(t, "Outbox sweeper retries exhausted", inc.ErrorMessage)
	require.Equal(t, incident.CodeOutboxExhausted, inc.ErrorCode)
	require.Contains(t, inc.ErrorDetail, "InternalError")
	require.Equal(t, "acme", inc.TenantID)
	var ev envelope.Event
	require.NoError(t, json.Unmarshal(inc.Body.Inline, &ev))
	require.JSONEq(t, `{"invoice":"evt_doomed"}`, string(ev.Payload), "the incident keeps the message to replay")

	// An abandoned row is never swept again.
	b.clock.Advance(24 * time.Hour)
	require.Zero(t, run(t, s).Due)
	require.Empty(t, b.received(t))
}

func TestSweeperDrainsBacklogLargerThanAPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 30
	for i := range n {
		b.strand(t, fmt.Sprintf("evt_%02d", i), t0.Add(-time.Duration(n-i)*time.Second))
	}
	// Pages of 2 per partition and rounds of 4: many pages and rounds.
	rep := run(t, b.sweeper(2, 4))
	require.Equal(t, n, rep.Due)
	require.Equal(t, n, rep.Sent)
	require.True(t, rep.Drained)
	got := b.received(t)
	require.Len(t, got, n)
	for id, c := range got {
		require.Equal(t, 1, c, id)
	}
	require.EqualValues(t, n, rep.OldestDueSeconds, "the oldest row was due 30 s ago")
}

func TestConcurrentSweepsSendEachRowExactlyOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 30
	for i := range n {
		b.strand(t, fmt.Sprintf("evt_%02d", i), t0.Add(-time.Minute))
	}
	var (
		wg      sync.WaitGroup
		reports [3]outboxsweep.Report
	)
	for i := range reports {
		wg.Go(func() {
			rep, err := b.sweeper(3, 5).Run(context.Background(), time.Now().Add(time.Minute))
			require.NoError(t, err)
			reports[i] = rep
		})
	}
	wg.Wait()
	sent := 0
	for _, r := range reports {
		sent += r.Sent
		require.Zero(t, r.Errors)
	}
	require.Equal(t, n, sent, "the runs share the rows between them")
	got := b.received(t)
	require.Len(t, got, n)
	for id, c := range got {
		require.Equal(t, 1, c, "%s sent %d times", id, c)
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	for attempts, want := range map[int]time.Duration{
		0: 2 * time.Minute, 1: 4 * time.Minute, 2: 8 * time.Minute, 3: 16 * time.Minute, 4: 32 * time.Minute,
	} {
		require.Equal(t, want, outboxsweep.Backoff(outboxsweep.DefaultBackoffBase, attempts), "attempts %d", attempts)
	}
}

func TestSweeperStopsAtItsBudget(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.strand(t, "evt_later", t0.Add(-time.Minute))
	// No time left: the run touches nothing and says it did not drain.
	rep, err := b.sweeper(0, 0).Run(context.Background(), time.Now().Add(-time.Second))
	require.NoError(t, err)
	require.Equal(t, outboxsweep.Report{}, rep)
	require.Equal(t, outbox.StatusPending, b.row(t, "evt_later").Status)

	// The Lambda handler derives the budget from the context's deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err = b.sweeper(0, 0).Handle(ctx, events.EventBridgeEvent{})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Sent)
	require.True(t, rep.Drained)
}

// A batch dispatch records its sends in one receipt and leaves its rows
// pending under its lease (outbox.Receipts). When the consumer lags past
// the lease, the sweeper must not send again what the receipt names: it
// records those rows enqueued and takes them out of the due index. A row
// of the same lease the receipt does not name (its send failed and so did
// the failure's mark) is sent.
func TestSweeperDoesNotResendWhatABatchReceiptNames(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner := outbox.BatchOwner("ingest-died")
	for _, id := range []string{"evt_sent1", "evt_sent2", "evt_unsent"} {
		b.strandBy(t, id, owner, t0.Add(-time.Minute))
	}
	require.NoError(t, b.events.RecordSent(context.Background(), outbox.Receipt{Owner: owner, Now: t0.Add(-2 * time.Minute),
		Rows: []outbox.RowRef{{Key: "evt_sent1", Topic: topic}, {Key: "evt_sent2", Topic: topic}}}))

	rep := run(t, b.sweeper(0, 0))
	require.Equal(t, 1, rep.Due, "only the unsent row is a send")
	require.Equal(t, 1, rep.Sent)
	require.Equal(t, 2, rep.Unindexed)
	require.Equal(t, map[string]int{"evt_unsent": 1}, b.received(t))
	for _, id := range []string{"evt_sent1", "evt_sent2", "evt_unsent"} {
		r := b.row(t, id)
		require.Equal(t, outbox.StatusEnqueued, r.Status, id)
		require.False(t, r.Receipted, "%s: recorded on the row itself now", id)
		require.Empty(t, r.LeaseOwner, id)
		require.True(t, r.UpdatedAt.Equal(t0), "%s: recorded at the sweep", id)
	}

	rep = run(t, b.sweeper(0, 0))
	require.Zero(t, rep.Due+rep.Unindexed+rep.Sent, "nothing left in the due index")
	require.Empty(t, b.received(t))
}
