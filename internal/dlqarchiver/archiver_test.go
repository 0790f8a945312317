package dlqarchiver_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/s3blob"
	"github.com/siteswarm/eventplatform/internal/dlqarchiver"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire/dlqarchiverfn"
)

const topic = topology.Billing

var t0 = testkit.T0

type bundle struct {
	env       *awslocaltest.Env
	arch      *dlqarchiver.Archiver
	bodies    *incident.Bodies
	events    *dynamo.Events
	incidents *dynamo.Incidents
	blobs     *s3blob.S3
	alerts    *recorder
	metrics   *testkit.Buffer
}

// recorder is an Alerter that keeps what it was sent (the SNS adapter is
// tested against the emulator in the replay end-to-end tests).
type recorder struct {
	mu  sync.Mutex
	got []dlqarchiver.Alert
}

func (r *recorder) Alert(_ context.Context, a dlqarchiver.Alert) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, a)
	return nil
}

func setup(t testing.TB, mods ...func(*dlqarchiver.Config)) *bundle {
	t.Helper()
	env := awslocaltest.NewEnv(t)
	b := &bundle{
		env:       env,
		events:    env.Events(),
		incidents: env.Incidents(),
		blobs:     &s3blob.S3{Client: env.S3},
		alerts:    &recorder{},
		metrics:   &testkit.Buffer{},
	}
	topics := map[string]string{}
	for name, q := range env.Resources.Queues {
		topics[q.DLQARN] = name
	}
	b.bodies = &incident.Bodies{Store: b.blobs, Bucket: env.Resources.Bucket}
	cfg := dlqarchiver.Config{DLQTopics: topics}
	for _, m := range mods {
		m(&cfg)
	}
	var err error
	b.arch, err = dlqarchiver.New(cfg, dlqarchiver.Deps{
		Incidents: &dynamo.Recovery{Events: b.events, Incidents: b.incidents}, Rows: b.events,
		Erasures: b.erasures(), Bodies: b.bodies,
		Alerts: b.alerts, Metrics: &metric.Emitter{W: b.metrics},
		Now: func() time.Time { return t0 },
	})
	require.NoError(t, err)
	return b
}

// erasures are the subject erasures as dlq-archiver finds them (the jobs
// table).
func (b *bundle) erasures() dlqarchiverfn.Erasures {
	return dlqarchiverfn.Erasures{Jobs: &dynamo.Jobs{Client: b.env.DynamoDB, Table: b.env.Resources.JobsTable}}
}

func attrs(kv ...string) map[string]events.SQSMessageAttribute {
	m := map[string]events.SQSMessageAttribute{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(kv[i+1])}
	}
	return m
}

func dead(id, body string, a map[string]events.SQSMessageAttribute, b *bundle) events.SQSMessage {
	return events.SQSMessage{MessageId: id, Body: body, MessageAttributes: a, EventSourceARN: b.env.Queue(topic).DLQARN}
}

// commit stores an event with its billing row enqueued and lastError set,
// as a consumer leaves a row it retried until SQS redrove the message.
func (b *bundle) commit(t testing.TB, id string, lastError string, also ...string) []byte {
	t.Helper()
	ctx := context.Background()
	ev := envelope.Event{SchemaVersion: 1, ID: id, TenantID: "acme", Type: "stripe.invoice.paid", Source: "stripe",
		Timestamp: t0, Payload: json.RawMessage(`{"invoice":"in_1"}`)}
	topics := append([]string{topic}, also...)
	rec := ledger.Record{Key: ev.ID, Event: ev, Topics: topics, PayloadHash: "h", Status: ledger.StatusReceived, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	var rows []outbox.Row
	for _, tp := range topics {
		rows = append(rows, outbox.Row{Key: id, EventID: id, Topic: tp, TenantID: "acme", Type: ev.Type, Status: outbox.StatusPending, MaxAttempts: 5,
			NextRetryAt: t0, LeaseUntil: t0, LeaseOwner: "x", CreatedAt: t0, UpdatedAt: t0})
	}
	require.NoError(t, b.events.Commit(ctx, ingest.CommitParams{Record: rec, Rows: rows}))
	if lastError != "" {
		ok, err := b.events.Claim(ctx, outbox.ClaimParams{Row: outbox.RowRef{Key: id, Topic: topic}, Owner: "o", Now: t0.Add(time.Second), Lease: time.Minute})
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, b.events.MarkFailed(ctx, outbox.Failure{Row: outbox.RowRef{Key: id, Topic: topic}, EventID: id, Owner: "o", Attempts: 1, Err: lastError, NextRetryAt: t0, Now: t0}))
	}
	body, err := ev.Marshal()
	require.NoError(t, err)
	return body
}

func (b *bundle) handle(t *testing.T, msgs ...events.SQSMessage) events.SQSEventResponse {
	t.Helper()
	resp, err := b.arch.Handle(context.Background(), events.SQSEvent{Records: msgs})
	require.NoError(t, err)
	return resp
}

func TestUnparseableDeadLetterIsArchivedRawAndAcked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	garbage := "this is {not an envelope"
	resp := b.handle(t, dead("m-raw", garbage, nil, b))
	require.Empty(t, resp.BatchItemFailures, "acknowledged")

	// No topic attribute: the topic comes from the DLQ it was drained from.
	page, err := b.incidents.List(ctx, incident.Filter{Topic: topic})
	require.NoError(t, err)
	require.Len(t, page.Incidents, 1)
	inc, err := b.incidents.Get(ctx, page.Incidents[0].ID)
	require.NoError(t, err)
	require.True(t, inc.Raw)
	require.Equal(t, garbage, string(inc.Body.Inline), "kept verbatim")
	require.Equal(t, b.env.Queue(topic).DLQARN, inc.SourceQueue)
	require.Equal(t, incident.CodeUnparseable, inc.ErrorCode)
	require.Equal(t, incident.UnknownTenant, inc.TenantID)
	require.True(t, strings.HasPrefix(inc.EventID, "raw-"))
	require.Len(t, b.alerts.got, 1)

	// A large raw body goes to S3, keeping the source attributes it had.
	big := strings.Repeat("#", 100<<10)
	resp = b.handle(t, dead("m-big", big, attrs(outbox.AttrEventID, "evt_big", outbox.AttrTenantID, "acme", outbox.AttrTopic, topic), b))
	require.Empty(t, resp.BatchItemFailures)
	inc, err = b.incidents.Get(ctx, incident.ID("evt_big", topic))
	require.NoError(t, err)
	require.True(t, inc.Body.External())
	require.Equal(t, "acme", inc.TenantID)
	data, err := b.bodies.Load(ctx, inc.Body)
	require.NoError(t, err)
	require.Equal(t, big, string(data))
}

func TestDeadLetterErrorFromAttributesOrLastError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	poison := b.commit(t, "evt_poison", "")
	redriven := b.commit(t, "evt_redriven", "subscriber timed out after 10s")

	resp := b.handle(t,
		// The consumer dead-lettered it itself, with its reason.
		dead("m-1", string(poison), attrs(outbox.AttrEventID, "evt_poison", outbox.AttrTopic, topic,
			outbox.AttrErrorCode, "schema_mismatch", outbox.AttrErrorMessage, "amount is not a number",
			outbox.AttrFailedAt, "2026-12-02T11:58:00Z"), b),
		// SQS redrove it after maxReceiveCount: only the original attributes.
		dead("m-2", string(redriven), attrs(outbox.AttrEventID, "evt_redriven", outbox.AttrTopic, topic), b),
	)
	require.Empty(t, resp.BatchItemFailures)

	p, err := b.incidents.Get(ctx, incident.ID("evt_poison", topic))
	require.NoError(t, err)
	require.Equal(t, "schema_mismatch", p.ErrorCode)
	require.Equal(t, "amount is not a number", p.ErrorMessage)
	require.Equal(t, time.Date(2026, 12, 2, 11, 58, 0, 0, time.UTC), p.LastFailedAt)
	require.Equal(t, "stripe.invoice.paid", p.Type)

	r, err := b.incidents.Get(ctx, incident.ID("evt_redriven", topic))
	require.NoError(t, err)
	require.Equal(t, incident.CodeMaxReceives, r.ErrorCode)
	require.Equal(t, "subscriber timed out after 10s", r.ErrorMessage, "the outbox row's lastError")

	for _, id := range []string{"evt_poison", "evt_redriven"} {
		row, ok, err := b.events.Row(ctx, outbox.RowRef{Key: id, Topic: topic})
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, outbox.StatusDLQ, row.Status)
	}
	require.Len(t, b.alerts.got, 2)
	require.Equal(t, 2, strings.Count(b.metrics.String(), `"IncidentsOpened":1`))
}

func TestRedeliveredDeadLetterCountsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	body := b.commit(t, "evt_dup", "")
	msg := dead("m-dup", string(body), attrs(outbox.AttrTopic, topic, outbox.AttrErrorCode, "x", outbox.AttrErrorMessage, "boom"), b)
	b.handle(t, msg)
	b.handle(t, msg) // the ack was lost; SQS delivered it again
	inc, err := b.incidents.Get(ctx, incident.ID("evt_dup", topic))
	require.NoError(t, err)
	require.Equal(t, 1, inc.RetryCount)
	require.Len(t, b.alerts.got, 1, "one alert")
}

func TestDeadLetterIsNotAckedUntilItsIncidentIsWritten(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// One at a time, deterministically: the first incident write is evt_bad's.
	b := setup(t, func(c *dlqarchiver.Config) { c.Concurrency = 1 })
	ok := b.commit(t, "evt_ok", "")
	bad := b.commit(t, "evt_bad", "")
	// The incident write for evt_bad fails; evt_ok's must not.
	remove := b.env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "TransactWriteItems", Resource: b.env.Resources.IncidentsTable, Times: 1})
	resp := b.handle(t,
		dead("m-bad", string(bad), attrs(outbox.AttrTopic, topic, outbox.AttrErrorCode, "x", outbox.AttrErrorMessage, "boom"), b),
		dead("m-ok", string(ok), attrs(outbox.AttrTopic, topic, outbox.AttrErrorCode, "x", outbox.AttrErrorMessage, "boom"), b),
	)
	remove()
	require.Equal(t, []events.SQSBatchItemFailure{{ItemIdentifier: "m-bad"}}, resp.BatchItemFailures)
	_, err := b.incidents.Get(ctx, incident.ID("evt_bad", topic))
	require.ErrorIs(t, err, incident.ErrNotFound)
	row, _, err := b.events.Row(ctx, outbox.RowRef{Key: "evt_bad", Topic: topic})
	require.NoError(t, err)
	require.NotEqual(t, outbox.StatusDLQ, row.Status, "the row is only marked after the incident")
	_, err = b.incidents.Get(ctx, incident.ID("evt_ok", topic))
	require.NoError(t, err)

	// The retry archives it.
	resp = b.handle(t, dead("m-bad", string(bad), attrs(outbox.AttrTopic, topic, outbox.AttrErrorCode, "x", outbox.AttrErrorMessage, "boom"), b))
	require.Empty(t, resp.BatchItemFailures)
	_, err = b.incidents.Get(ctx, incident.ID("evt_bad", topic))
	require.NoError(t, err)
}

// The DLQ a dead letter was read from decides its topic. A message whose
// topic attribute names another topic (misrouted by hand) must not mark
// that topic's row dlq, which would stop its sweep: the incident is on the
// source queue's topic and records the mismatch.
func TestTheSourceQueueDecidesTheTopic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	// A crm.sync row for the same event, still pending.
	body := b.commit(t, "evt_misrouted", "", topology.CRM)

	msg := events.SQSMessage{
		MessageId: "m-misrouted", Body: string(body),
		MessageAttributes: attrs(outbox.AttrEventID, "evt_misrouted", outbox.AttrTenantID, "acme", outbox.AttrTopic, topic),
		EventSourceARN:    b.env.Queue(topology.CRM).DLQARN,
	}
	resp := b.handle(t, msg)
	require.Empty(t, resp.BatchItemFailures)

	inc, err := b.incidents.Get(ctx, incident.ID("evt_misrouted", topology.CRM))
	require.NoError(t, err)
	require.Equal(t, topology.CRM, inc.Topic)
	require.Contains(t, inc.ErrorDetail, "misrouted")
	_, err = b.incidents.Get(ctx, incident.ID("evt_misrouted", topic))
	require.ErrorIs(t, err, incident.ErrNotFound, "no incident on the topic the attribute names")
	billing, ok, err := b.events.Row(ctx, outbox.RowRef{Key: "evt_misrouted", Topic: topic})
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, outbox.StatusPending, billing.Status, "the other topic's row is untouched: its sweep goes on")
	crmRow, _, err := b.events.Row(ctx, outbox.RowRef{Key: "evt_misrouted", Topic: topology.CRM})
	require.NoError(t, err)
	require.Equal(t, outbox.StatusDLQ, crmRow.Status)
}

// Issue 32 item 5: the archiver read the dispatch row's erasure marker,
// then upserted the incident in a separate write, so an erasure that
// completed between the two left an incident whose body held the payload.
// The incident write is guarded by the marker in its own transaction:
// refused, the dead letter is dropped (acknowledged) and no table item
// holds the payload. The body it stored first (too large to keep inline)
// lies under the incident's prefix, which the erasure deletes after its
// writers' window (jobkinds TestErasureDuringADeadLetterKeepsNothing runs
// the whole erasure).
func TestADeadLetterErasedWhileItIsArchivedOpensNoIncident(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	b.commit(t, "evt_race", "")
	const email = "ann@archiver-race.test"
	ev := envelope.Event{SchemaVersion: 1, ID: "evt_race", TenantID: "acme", Type: "stripe.invoice.paid", Source: "stripe", Timestamp: t0,
		Payload: json.RawMessage(`{"customer_email":"` + email + `","notes":"` + strings.Repeat("n", incident.DefaultInlineBytes) + `"}`)}
	body, err := ev.Marshal()
	require.NoError(t, err)

	// Right after the archiver read the row (no marker yet), the event
	// is erased.
	hook := &awslocaltest.Hook{Service: "DynamoDB", Operation: "GetItem", Match: func(in any) bool {
		g, ok := in.(*dynamodb.GetItemInput)
		return ok && aws.ToString(g.TableName) == b.env.Resources.EventsTable
	}, Do: func() { b.env.EraseEvent(t, "evt_race") }}
	rows := &dynamo.Events{Client: dynamodb.New(b.env.DynamoDB.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, hook.APIOption) }),
		Table: b.env.Resources.EventsTable}
	topics := map[string]string{}
	for name, q := range b.env.Resources.Queues {
		topics[q.DLQARN] = name
	}
	arch, err := dlqarchiver.New(dlqarchiver.Config{DLQTopics: topics}, dlqarchiver.Deps{
		Incidents: b.env.Recovery(), Rows: rows, Erasures: b.erasures(), Bodies: b.bodies, Alerts: b.alerts, Now: func() time.Time { return t0 },
	})
	require.NoError(t, err)
	resp, err := arch.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{
		dead("m-race", string(body), attrs(outbox.AttrTopic, topic, outbox.AttrErrorCode, "subscriber_rejected", outbox.AttrErrorMessage, "422"), b)}})
	require.NoError(t, err)
	require.True(t, hook.Ran(), "the erasure ran between the read and the write")
	require.Empty(t, resp.BatchItemFailures, "acknowledged: nothing of it is kept")
	_, err = b.incidents.Get(ctx, incident.ID("evt_race", topic))
	require.ErrorIs(t, err, incident.ErrNotFound, "no incident holds the payload")
	for _, where := range b.env.Copies(t, email) {
		require.Contains(t, where, "s3://"+b.env.Resources.Bucket+"/"+incident.ObjectPrefix("acme", incident.ID("evt_race", topic)),
			"no table item; only the body kept under the incident's prefix")
	}
	require.Empty(t, b.alerts.got, "no alert about it")
}

// A dead letter whose dispatch row is gone (its event past the ledger's
// retention) is dropped when an erasure of its subject ran since the
// message was first sent (here, without SentTimestamp, since the event's
// timestamp), and archived when the last erasure of its subject ran
// before: an event about the subject after its erasure is new data, and
// its dead letter is not lost.
func TestADeadLetterWithoutItsRowAsksTheSubjectsErasure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	erasure := func(subject string, at time.Time) {
		args, err := json.Marshal(jobkinds.ErasureArgs{Subject: subject})
		require.NoError(t, err)
		require.NoError(t, (&dynamo.Jobs{Client: b.env.DynamoDB, Table: b.env.Resources.JobsTable}).Create(ctx, jobs.Job{
			ID: "job_" + subject, Kind: jobkinds.KindErasure, TenantID: "acme", IdempotencyKey: jobkinds.ErasureKind.KeyOf(args), Args: args,
			Status: jobs.StatusCompleted, CreatedAt: at.Add(-time.Minute), UpdatedAt: at, FinishedAt: at,
		}))
	}
	erasure("user-erased-after", t0.Add(time.Hour))
	erasure("user-erased-before", t0.Add(-time.Hour))
	for subject, want := range map[string]bool{"user-erased-after": false, "user-erased-before": true, "user-never-erased": true} {
		ev := envelope.Event{SchemaVersion: 1, ID: "evt_" + subject, TenantID: "acme", Type: "contact.created", Source: "storefront", Subject: subject,
			Timestamp: t0, Payload: json.RawMessage(`{"email":"someone@example.test"}`)}
		body, err := ev.Marshal()
		require.NoError(t, err)
		resp, err := b.arch.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{dead("m-"+subject, string(body), attrs(outbox.AttrTopic, topic), b)}})
		require.NoError(t, err)
		require.Empty(t, resp.BatchItemFailures, subject)
		_, err = b.incidents.Get(ctx, incident.ID(ev.ID, topic))
		if want {
			require.NoError(t, err, "%s: archived", subject)
		} else {
			require.ErrorIs(t, err, incident.ErrNotFound, "%s: dropped, nothing of it kept", subject)
		}
	}
}
