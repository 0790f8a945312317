package dynamo_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/observe/costmodel"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// Issue 36 §2: a delivery attempt rides on the outcome write the row gets
// anyway, within the row's write unit. Metered, a completion recording the
// attempt with a full answer costs what a completion without it costs; on
// a row close to 1 KB the answer is cut to what fits, never the attempt.
func TestRecordingAnAttemptCostsNoWriteUnit(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t)
	peek := awslocal.NewDynamoDBClient(env.Emulators.Config(), env.Emulators.DynamoDBEndpoint)
	m := costmodel.NewMeter(peek, env.Prefix)
	client := awslocal.NewDynamoDBClient(env.Emulators.Config(), env.Emulators.DynamoDBEndpoint, func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, m.APIOption)
	})
	b := &leaseBundle{env: env, events: &dynamo.Events{Client: client, Table: env.Resources.EventsTable}}
	ctx := context.Background()
	answer := strings.Repeat("a", outbox.MaxAnswerLen)

	complete := func(id, typ string, with bool) (wru float64, got outbox.Attempt) {
		t.Helper()
		commitTyped(t, b, id, typ)
		p := processing(id, "msg-"+id, leaseT0, 30*time.Second)
		c, err := b.events.BeginProcessing(ctx, p)
		require.NoError(t, err)
		require.Equal(t, consume.Claimed, c.State)
		done := consume.Completion{Row: p.Row, Owner: p.Owner, Now: leaseT0.Add(time.Second)}
		if with {
			done.Attempt = outbox.Attempt{N: c.Log.Next, At: leaseT0, Duration: 30 * time.Millisecond, Delivery: outbox.DeliveryOriginal,
				Outcome: outbox.OutcomeDelivered, Status: 200, Answer: answer}
			done.Log = c.Log
		}
		m.Reset()
		require.NoError(t, b.events.MarkCompleted(ctx, done))
		u, _ := m.Snapshot()
		item := b.rawRow(t, id, "a.events")
		require.LessOrEqual(t, table.ItemSize(item), 1024, "the completed row stays in one write unit")
		if as := b.row(t, id, "a.events").DeliveryAttempts; len(as) > 0 {
			got = as[0]
		}
		return u.WRU, got
	}

	without, _ := complete("evt_plain", "content.published", false)
	with, got := complete("evt_attempt", "content.published", true)
	require.Equal(t, without, with, "the attempt costs no write unit")
	require.Equal(t, answer, got.Answer, "a small row keeps the whole answer")

	// A row of about 900 bytes (a long event type) has room for the
	// attempt, not for its whole answer.
	long := "content." + strings.Repeat("x", 560)
	without, _ = complete("evt_bigplain", long, false)
	with, got = complete("evt_bigattempt", long, true)
	require.Equal(t, without, with, "the attempt costs no write unit")
	require.Equal(t, 1, got.N, "the attempt is recorded")
	require.Equal(t, 200, got.Status)
	require.Less(t, len(got.Answer), len(answer), "its answer cut to the room the write unit leaves")
	t.Logf("kept %d of %d answer bytes", len(got.Answer), len(answer))
}

// commitTyped stores an event of type typ with one pending row on
// a.events.
func commitTyped(t *testing.T, b *leaseBundle, id, typ string) {
	t.Helper()
	rec := ledger.Record{
		Key:    id,
		Event:  envelope.Event{SchemaVersion: 1, ID: id, TenantID: "acme", Type: typ, Source: "cms", Timestamp: leaseT0, Payload: []byte(`{"a":1}`)},
		Topics: []string{"a.events"}, PayloadHash: "h", Status: ledger.StatusReceived, CreatedAt: leaseT0, ExpiresAt: leaseT0.Add(24 * time.Hour),
	}
	rows := []outbox.Row{{Key: id, EventID: id, Topic: "a.events", TenantID: "acme", Type: typ, Status: outbox.StatusEnqueued,
		MaxAttempts: 5, NextRetryAt: leaseT0.Add(time.Minute), CreatedAt: leaseT0, UpdatedAt: leaseT0}}
	require.NoError(t, b.events.Commit(context.Background(), ingest.CommitParams{Record: rec, Rows: rows}))
}
