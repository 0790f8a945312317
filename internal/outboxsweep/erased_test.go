package outboxsweep_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/s3blob"
	"github.com/siteswarm/eventplatform/internal/aws/sqsqueue"
	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/claimcheck"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/outboxsweep"
)

// Issue 32 item 4: a stranded row on its last attempt. The sweeper claims
// it and reads the ledger, the event is erased while the send is in
// flight, the send fails, and the abandon (conditional on lease and status,
// not on the erasure marker) opened an incident whose body carried the
// payload after the erasure. The abandon is guarded by the row's marker in
// its own transaction: no incident, and the row is out of the due index;
// the next sweep finds nothing to do. The copy of the claim-checked payload
// kept for the incident lies under the incident's prefix, which the
// erasure deletes after its writers' window (jobkinds
// TestErasureDuringAStrandedSendsLastAttemptKeepsNothing runs the whole
// erasure).
func TestAnEventErasedDuringItsLastSendOpensNoIncident(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	const email = "ann@last-send.test"
	blobs := &s3blob.S3{Client: b.env.S3}
	ref, err := claimcheck.Checker{Store: blobs, Bucket: b.env.Resources.Bucket}.Put(ctx, "acme", "evt_last", []byte(`{"customer_email":"`+email+`"}`))
	require.NoError(t, err)
	rec := ledger.Record{
		Key: "evt_last",
		Event: envelope.Event{SchemaVersion: 1, ID: "evt_last", TenantID: "acme", Type: "stripe.invoice.paid", Source: "stripe",
			Timestamp: t0, PayloadRef: ref},
		Topics: []string{topic}, PayloadHash: "h", Status: ledger.StatusReceived, CreatedAt: t0, ExpiresAt: t0.Add(14 * 24 * time.Hour),
		OrderingKey: "cus_last",
	}
	row := outbox.Row{Key: "evt_last", EventID: "evt_last", Topic: topic, TenantID: "acme", Type: rec.Event.Type, Status: outbox.StatusFailed,
		Attempts: 4, MaxAttempts: 5, LastError: "queue unavailable", NextRetryAt: t0.Add(-time.Minute), CreatedAt: t0, UpdatedAt: t0}
	require.NoError(t, b.events.Commit(ctx, ingest.CommitParams{Record: rec, Rows: []outbox.Row{row}}))

	// The sweeper has claimed the row and read its ledger item; the event
	// is erased while its last send is in flight, and the send fails.
	hook := &awslocaltest.Hook{Service: "SQS", Operation: "SendMessage", Before: true, Err: errors.New("queue unavailable"),
		Do: func() { b.env.EraseEvent(t, "evt_last") }}
	s, err := outboxsweep.New(outboxsweep.Config{}, outboxsweep.Deps{
		Rows: b.events, Abandoner: b.env.Recovery(), Incidents: b.incidents,
		Sender: &sqsqueue.Sender{Client: sqs.New(b.env.SQS.Options(), func(o *sqs.Options) { o.APIOptions = append(o.APIOptions, hook.APIOption) }),
			URLs: b.env.Resources.QueueURLs(), FIFO: b.env.Topology.FIFOTopics()},
		Bodies:  &incident.Bodies{Store: blobs, Bucket: b.env.Resources.Bucket},
		Metrics: &metric.Emitter{W: b.metrics}, Now: b.clock.Now,
	})
	require.NoError(t, err)
	rep := run(t, s)
	require.True(t, hook.Ran(), "the erasure ran during the send")
	require.Equal(t, 1, rep.Due)
	require.Zero(t, rep.Abandoned, "no incident")
	require.Equal(t, 1, rep.Erased)
	require.Zero(t, rep.Errors)
	_, err = b.incidents.Get(ctx, incident.ID("evt_last", topic))
	require.ErrorIs(t, err, incident.ErrNotFound)
	// The claim-checked payload itself is the erasure's to delete (its
	// events phase does); besides it only the copy kept under the
	// incident's prefix holds the data, no table item.
	for _, key := range objectKeys(b.env.Copies(t, email)) {
		if key != ref.Key {
			require.True(t, strings.HasPrefix(key, incident.ObjectPrefix("acme", incident.ID("evt_last", topic))), key)
		}
	}

	got := b.row(t, "evt_last")
	require.False(t, got.ErasedAt.IsZero())
	require.Equal(t, 4, got.Attempts, "the abandon wrote nothing")
	b.clock.Set(t0.Add(24 * time.Hour))
	rep = run(t, s)
	require.Zero(t, rep.Due+rep.Skipped+rep.Erased, "nothing is due any more: %+v", rep)
	require.Zero(t, rep.OldestDueSeconds)
}

// Issue 32 item 9: a row erased while a send held it, whose send then
// failed, went back into the due index; no claim takes an erased row, so
// every sweep reported it skipped and OldestDueSeconds grew by a day a day
// until the row expired. Its failure now takes it out of the index; a row
// left there before (written by the old code) is taken out by the next
// sweep that finds it.
func TestAnErasedRowThatFailsLeavesTheDueIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	b.strandBy(t, "evt_fail", "ingest-1", t0.Add(time.Minute))
	b.env.EraseEvent(t, "evt_fail")
	require.NoError(t, b.events.MarkFailed(ctx, outbox.Failure{Row: outbox.RowRef{Key: "evt_fail", Topic: topic}, EventID: "evt_fail", Owner: "ingest-1",
		Attempts: 1, Err: "throttled", NextRetryAt: t0.Add(2 * time.Minute), Now: t0}))
	for _, day := range []time.Duration{1, 2} {
		b.clock.Set(t0.Add(day * 24 * time.Hour))
		rep := run(t, b.sweeper(0, 0))
		require.Zero(t, rep.Skipped, "day %d", day)
		require.Zero(t, rep.Due, "day %d", day)
		require.Zero(t, rep.OldestDueSeconds, "day %d: no outbox lag", day)
	}
	require.Equal(t, outbox.StatusFailed, b.row(t, "evt_fail").Status, "the failure is recorded")

	// A row the old failure put back in the index is taken out.
	b.strandBy(t, "evt_left", "ingest-2", t0.Add(time.Minute))
	b.env.EraseEvent(t, "evt_left")
	_, err := b.env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(b.env.Resources.EventsTable),
		Key: map[string]ddbtypes.AttributeValue{table.AttrPK: &ddbtypes.AttributeValueMemberS{Value: dynamo.EventPK("evt_left")},
			table.AttrSK: &ddbtypes.AttributeValueMemberS{Value: dynamo.DispatchSK(topic)}},
		UpdateExpression:          aws.String("SET duePk = :dp, #s = :failed, leaseOwner = :none"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":dp": &ddbtypes.AttributeValueMemberS{Value: table.DuePartition("evt_left", topic)}, ":failed": &ddbtypes.AttributeValueMemberS{Value: string(outbox.StatusFailed)}, ":none": &ddbtypes.AttributeValueMemberS{Value: ""}},
	})
	require.NoError(t, err)
	rep := run(t, b.sweeper(0, 0))
	require.Equal(t, 1, rep.Erased, "taken out of the index")
	require.Zero(t, rep.Skipped+rep.Due)
	rep = run(t, b.sweeper(0, 0))
	require.Zero(t, rep.Erased+rep.Skipped+rep.Due, "and gone from it")
}

// objectKeys keeps the object keys of Copies' locations.
func objectKeys(where []string) []string {
	var out []string
	for _, w := range where {
		if rest, ok := strings.CutPrefix(w, "s3://"); ok {
			_, key, _ := strings.Cut(rest, "/")
			key, _, _ = strings.Cut(key, "?")
			out = append(out, key)
			continue
		}
		out = append(out, w)
	}
	return out
}
