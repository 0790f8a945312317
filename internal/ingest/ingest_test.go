package ingest_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/s3blob"
	"github.com/siteswarm/eventplatform/internal/claimcheck"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/kit/canonjson"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/ingestfn"
	"github.com/siteswarm/eventplatform/internal/wire/wiretest"
)

type bundle struct {
	env    *awslocaltest.Env
	svc    *ingest.Service
	events *dynamo.Events
	clock  *testkit.Clock
	cfg    ingestfn.Config
	deps   ingest.Deps
	// local: the events table is DynamoDB Local's (else the embedded
	// emulator's).
	local bool
}

// with builds another service on the bundle's environment and clock, with
// cfg adjusted.
func (b *bundle) with(t testing.TB, mod func(*ingest.Config)) *ingest.Service {
	t.Helper()
	cfg := b.cfg.Ingest
	mod(&cfg)
	svc, err := ingest.New(cfg, b.deps)
	require.NoError(t, err)
	return svc
}

// setup builds ingest as its Lambda does (wire/ingestfn) on a fresh
// environment, on a test clock; mods adjust the config and dependencies
// first.
func setup(t testing.TB, mods ...func(*ingest.Config, *ingest.Deps)) *bundle {
	t.Helper()
	return setupOn(t, awslocaltest.NewEnv(t), mods...)
}

// setupOn is setup on env.
func setupOn(t testing.TB, env *awslocaltest.Env, mods ...func(*ingest.Config, *ingest.Deps)) *bundle {
	t.Helper()
	clk := testkit.NewClock(testkit.T0)
	cfg := wiretest.IngestConfig(t, env, wiretest.Opts{})
	d := ingestfn.Deps(cfg, ingestfn.Clients{DynamoDB: env.DynamoDB, SQS: env.SQS, S3: env.S3}, wire.Runtime{Now: clk.Now})
	for _, m := range mods {
		m(&cfg.Ingest, &d)
	}
	svc, err := ingest.New(cfg.Ingest, d)
	require.NoError(t, err)
	return &bundle{env: env, svc: svc, events: env.Events(), clock: clk, cfg: cfg, deps: d}
}

// key is the storage key of an acme event of an internal producer.
func key(id string) string { return "acme/" + id }

// event builds an envelope; inquiry.created fans out to two topics.
func event(id, typ, source string, payload any) []byte {
	return []byte(testkit.MustJSON(map[string]any{
		"id": id, "tenantId": "acme", "type": typ, "source": source,
		"timestamp": "2026-12-02T11:59:00Z", "payload": payload,
	}))
}

func inquiry(id string) []byte {
	return event(id, "inquiry.created", "storefront", map[string]any{"name": "Ada", "message": "hi"})
}

func (b *bundle) publish(t *testing.T, raw []byte) envelope.Result {
	t.Helper()
	res, err := b.svc.Publish(context.Background(), raw)
	require.NoError(t, err)
	return res
}

func (b *bundle) queueURL(topic string) string { return b.env.Resources.Queues[topic].URL }

func (b *bundle) drain(t *testing.T, topic string) []sqstypes.Message {
	t.Helper()
	return b.env.ReceiveAll(context.Background(), b.queueURL(topic), 100, 300*time.Millisecond)
}

func (b *bundle) collection(t *testing.T, eventID string) []map[string]ddbtypes.AttributeValue {
	t.Helper()
	out, err := b.env.DynamoDB.Query(context.Background(), &dynamodb.QueryInput{
		TableName:              aws.String(b.cfg.EventsTable),
		KeyConditionExpression: aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":pk": &ddbtypes.AttributeValueMemberS{Value: dynamo.EventPK(key(eventID))},
		},
		ConsistentRead: aws.Bool(true),
	})
	require.NoError(t, err)
	return out.Items
}

func (b *bundle) rows(t *testing.T, eventID string) map[string]outbox.Row {
	t.Helper()
	_, rows, err := b.events.Load(context.Background(), key(eventID))
	require.NoError(t, err)
	m := map[string]outbox.Row{}
	for _, r := range rows {
		m[r.Topic] = r
	}
	return m
}

func (b *bundle) tableItems(t *testing.T) int {
	t.Helper()
	out, err := b.env.DynamoDB.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(b.cfg.EventsTable)})
	require.NoError(t, err)
	return len(out.Items)
}

// Guarantee 1: exactly one ledger item per id under concurrent deliveries.
func TestConcurrentDuplicates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	raw := inquiry("evt_concurrent")

	const n = 50
	results := make([]envelope.Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], errs[i] = b.svc.Publish(context.Background(), raw)
		})
	}
	close(start)
	wg.Wait()

	counts := map[envelope.Status]int{}
	for i := range n {
		require.NoError(t, errs[i])
		counts[results[i].Status]++
	}
	require.Equal(t, map[envelope.Status]int{envelope.StatusEnqueued: 1, envelope.StatusDuplicate: n - 1}, counts)

	items := b.collection(t, "evt_concurrent")
	require.Len(t, items, 3, "one ledger item and one outbox row per topic")
	for topic, row := range b.rows(t, "evt_concurrent") {
		require.Equal(t, outbox.StatusEnqueued, row.Status, topic)
	}
	for _, topic := range []string{topology.Notifications, topology.CRM} {
		msgs := b.drain(t, topic)
		require.Len(t, msgs, 1, "exactly one message on %s", topic)
		require.Equal(t, "evt_concurrent", aws.ToString(msgs[0].MessageAttributes["eventId"].StringValue))
	}
}

// Guarantee 3 (docs/architecture.md §5): a caller retry re-drives only the failed topic.
func TestPartialFanOutThenRetrySendsOnlyFailedTopic(t *testing.T) {
	t.Parallel()
	b := setup(t)
	remove := b.env.Faults.Add(awslocal.Fault{Service: "SQS", Operation: "SendMessage", Resource: b.queueURL(topology.CRM)})

	res := b.publish(t, inquiry("evt_partial"))
	require.Equal(t, envelope.StatusAccepted, res.Status)
	require.Equal(t, []string{topology.Notifications, topology.CRM}, res.Topics)
	require.Equal(t, []string{topology.CRM}, res.PendingTopics)

	rows := b.rows(t, "evt_partial")
	require.Equal(t, outbox.StatusEnqueued, rows[topology.Notifications].Status)
	crm := rows[topology.CRM]
	require.Equal(t, outbox.StatusFailed, crm.Status)
	require.Equal(t, 1, crm.Attempts)
	require.NotEmpty(t, crm.LastError)
	require.Equal(t, b.clock.Now().Add(2*time.Minute), crm.NextRetryAt)
	require.False(t, crm.Leased(b.clock.Now()), "a failed row releases its lease")

	remove()
	b.clock.Advance(5 * time.Second)
	res = b.publish(t, inquiry("evt_partial"))
	require.Equal(t, envelope.StatusDuplicate, res.Status)
	require.Empty(t, res.PendingTopics)

	require.Len(t, b.drain(t, topology.Notifications), 1, "topic A is never re-sent")
	require.Len(t, b.drain(t, topology.CRM), 1, "topic B is sent by the retry")
	rows = b.rows(t, "evt_partial")
	require.Equal(t, outbox.StatusEnqueued, rows[topology.CRM].Status)
	require.Equal(t, 1, rows[topology.CRM].Attempts)
}

// Guarantee 2: a crash between commit and send strands nothing.
func TestCrashAfterCommitLeavesRowsDueAfterLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Every send fails and every status write is lost, as if the function
	// died right after the commit.
	b.env.Faults.Add(awslocal.Fault{Service: "SQS", Operation: "SendMessage"})
	b.env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "UpdateItem", Resource: b.cfg.EventsTable})

	res := b.publish(t, inquiry("evt_crash"))
	require.Equal(t, envelope.StatusAccepted, res.Status)
	require.ElementsMatch(t, []string{topology.Notifications, topology.CRM}, res.PendingTopics)

	for topic, row := range b.rows(t, "evt_crash") {
		require.Equal(t, outbox.StatusPending, row.Status, topic)
		require.Zero(t, row.Attempts, topic)
		require.True(t, row.Leased(b.clock.Now()), topic)
	}
	ctx := context.Background()
	due, err := b.events.Due(ctx, b.clock.Now(), 50)
	require.NoError(t, err)
	require.Empty(t, due, "inside the lease the sweeper must not see the rows")

	due, err = b.events.Due(ctx, b.clock.Now().Add(b.cfg.Ingest.Lease+time.Second), 50)
	require.NoError(t, err)
	require.Len(t, due, 2, "after the lease both rows are due through the status index")
	for _, r := range due {
		require.Equal(t, "evt_crash", r.EventID)
		require.Equal(t, outbox.StatusPending, r.Status)
	}
}

// Guarantee 7: same id, different content is rejected, nothing written or sent.
func TestIdempotencyConflict(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Equal(t, envelope.StatusEnqueued, b.publish(t, inquiry("evt_conflict")).Status)
	before := b.collection(t, "evt_conflict")

	other := event("evt_conflict", "inquiry.created", "storefront", map[string]any{"name": "Eve"})
	res := b.publish(t, other)
	require.Equal(t, envelope.StatusRejected, res.Status)
	require.Equal(t, envelope.CodeIdempotencyConflict, res.Error.Code)
	require.Equal(t, "evt_conflict", res.EventID)

	require.Equal(t, before, b.collection(t, "evt_conflict"), "nothing written")
	require.Len(t, b.drain(t, topology.Notifications), 1, "nothing sent")
	require.Len(t, b.drain(t, topology.CRM), 1, "nothing sent")
}

// Internal producers' ids are scoped by tenant: tenant B reusing tenant A's
// id publishes its own event (no conflict, which would also tell B the id
// exists), and A's event is untouched.
func TestEventIDsAreScopedByTenant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Equal(t, envelope.StatusEnqueued, b.publish(t, inquiry("evt_shared")).Status)
	before := b.collection(t, "evt_shared")

	otherTenant := []byte(strings.Replace(string(inquiry("evt_shared")), `"tenantId":"acme"`, `"tenantId":"globex"`, 1))
	res := b.publish(t, otherTenant)
	require.Equal(t, envelope.StatusEnqueued, res.Status, "a new event of globex")
	require.Equal(t, before, b.collection(t, "evt_shared"), "acme's event is untouched")
	_, rows, err := b.events.Load(context.Background(), "globex/evt_shared")
	require.NoError(t, err)
	require.Len(t, rows, 2)
	for _, topic := range []string{topology.Notifications, topology.CRM} {
		msgs := b.drain(t, topic)
		require.Len(t, msgs, 2, "one message per tenant's event")
		keys := []string{}
		for _, m := range msgs {
			keys = append(keys, aws.ToString(m.MessageAttributes["eventKey"].StringValue))
		}
		require.ElementsMatch(t, []string{"acme/evt_shared", "globex/evt_shared"}, keys)
	}
	// A retry by globex is its own duplicate, not acme's.
	require.Equal(t, envelope.StatusDuplicate, b.publish(t, otherTenant).Status)
}

func TestRejectionsAndUnrouted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	valid := map[string]any{
		"id": "evt_v", "tenantId": "acme", "type": "content.published", "source": "cms",
		"timestamp": "2026-12-02T11:59:00Z", "payload": map[string]any{"tags": []string{"tenant:acme"}},
	}
	with := func(k string, v any) []byte {
		m := map[string]any{}
		for kk, vv := range valid {
			m[kk] = vv
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return []byte(testkit.MustJSON(m))
	}
	cases := []struct {
		name string
		raw  []byte
		code envelope.Code
	}{
		{"invalid envelope", []byte(`[1]`), envelope.CodeInvalidEnvelope},
		{"missing field", with("tenantId", nil), envelope.CodeMissingField},
		{"invalid id", with("id", "has space"), envelope.CodeInvalidID},
		{"invalid tenant", with("tenantId", "ACME"), envelope.CodeInvalidTenant},
		{"invalid type", with("type", "Content"), envelope.CodeInvalidType},
		{"invalid source", with("source", "C M S"), envelope.CodeInvalidSource},
		{"invalid timestamp", with("timestamp", "2027-01-01T00:00:00Z"), envelope.CodeInvalidTimestamp},
		{"invalid payload", with("payload", []string{"x"}), envelope.CodeInvalidPayload},
		{"invalid subject", with("subject", strings.Repeat("s", 300)), envelope.CodeInvalidSubject},
		{"invalid traceparent", with("traceparent", "01-xyz"), envelope.CodeInvalidTraceparent},
		{"payload too large", with("payload", map[string]string{"x": strings.Repeat("x", 1<<20)}), envelope.CodePayloadTooLarge},
		{"unknown source", with("source", "gitlab"), envelope.CodeUnknownSource},
		{"type not allowed", with("type", "stripe.invoice.paid"), envelope.CodeTypeNotAllowed},
	}
	for _, tc := range cases {
		res := b.publish(t, tc.raw)
		require.Equal(t, envelope.StatusRejected, res.Status, tc.name)
		require.NotNil(t, res.Error, tc.name)
		require.Equal(t, tc.code, res.Error.Code, "%s: %s", tc.name, res.Error.Message)
		require.NotEmpty(t, res.Error.Message, tc.name)
		require.NotNil(t, res.Topics, tc.name)
	}

	res := b.publish(t, with("type", "content.drafted"))
	require.Equal(t, envelope.StatusUnrouted, res.Status)
	require.Equal(t, "evt_v", res.EventID)
	require.Empty(t, res.Topics)

	require.Zero(t, b.env.Calls.Total(), "rejections cost no AWS calls")
	require.Zero(t, b.tableItems(t), "rejected and unrouted events store nothing")
}

func TestClaimCheckRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	big := strings.Repeat("0123456789abcdef", 300<<10/16)
	raw := event("evt_big", "content.published", "cms", map[string]any{"blob": big})
	orig, perr := envelope.Parse(raw, b.clock.Now(), envelope.DefaultLimits())
	require.Nil(t, perr)

	res := b.publish(t, raw)
	require.Equal(t, envelope.StatusEnqueued, res.Status)

	rec, _, err := b.events.Load(ctx, key("evt_big"))
	require.NoError(t, err)
	require.Nil(t, rec.Event.Payload, "the ledger item holds a reference, not the payload")
	require.NotNil(t, rec.Event.PayloadRef)
	require.Equal(t, len(orig.Payload), rec.Event.PayloadRef.Size)

	msgs := b.drain(t, topology.CachePurge)
	require.Len(t, msgs, 1)
	body := aws.ToString(msgs[0].Body)
	require.Less(t, len(body), 4<<10, "the message carries the reference only")
	ev, rerr := envelope.ParseMessage([]byte(body))
	require.Nil(t, rerr)
	require.NotNil(t, ev.PayloadRef)
	require.NoError(t, claimcheck.Rehydrate(ctx, &s3blob.S3{Client: b.env.S3}, &ev))
	require.Equal(t, string(orig.Payload), string(ev.Payload), "identical bytes after rehydration")

	// The same large event again is a duplicate, not a conflict.
	require.Equal(t, envelope.StatusDuplicate, b.publish(t, raw).Status)

	tooBig := event("evt_too_big", "content.published", "cms", map[string]any{"x": ""})
	pad := (1 << 20) + 1 - len(`{"x":""}`)
	tooBig = []byte(strings.Replace(string(tooBig), `{"x":""}`, `{"x":"`+strings.Repeat("y", pad)+`"}`, 1))
	res = b.publish(t, tooBig)
	require.Equal(t, envelope.StatusRejected, res.Status)
	require.Equal(t, envelope.CodePayloadTooLarge, res.Error.Code)

	exact := []byte(strings.Replace(string(tooBig), `"x":"y`, `"x":"`, 1))
	require.Equal(t, envelope.StatusEnqueued, b.publish(t, []byte(strings.Replace(string(exact), "evt_too_big", "evt_max", 1))).Status, "exactly 1 MiB is accepted")
}

func TestTransactionConflictIsRetried(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env.Faults.Add(awslocal.Fault{
		Service: "DynamoDB", Operation: "TransactWriteItems", Times: 2,
		Err: awslocal.TransactionConflict(3, 1),
	})
	res := b.publish(t, inquiry("evt_txconflict"))
	require.Equal(t, envelope.StatusEnqueued, res.Status)
	require.Equal(t, 2, b.env.Faults.Injected("TransactWriteItems"))
	require.Len(t, b.collection(t, "evt_txconflict"), 3, "committed once")
	require.Len(t, b.drain(t, topology.Notifications), 1)
}

func TestThrottledCommitIsAFunctionError(t *testing.T) {
	t.Parallel()
	b := setup(t, func(_ *ingest.Config, d *ingest.Deps) {
		d.Ledger = &dynamo.Events{Client: d.Ledger.(*dynamo.Events).Client, Table: d.Ledger.(*dynamo.Events).Table, CommitAttempts: 3, Backoff: time.Millisecond}
	})
	b.env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "TransactWriteItems", Err: awslocal.TransactionConflict(2, 0)})
	_, err := b.svc.Publish(context.Background(), event("evt_thr", "content.published", "cms", map[string]any{}))
	require.Error(t, err, "infrastructure failure before the commit is a function error: the caller retries")
	require.Contains(t, err.Error(), "gave up after 3 attempts")
	require.Zero(t, b.tableItems(t))
}

// The cost model: happy path with one topic is 1 transaction + 1 send + 1
// status write; fan-out adds one send and one write per topic; a duplicate
// with nothing to re-drive costs the failed transaction plus one query.
func TestAWSCallsPerEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	calls := func() map[string]int {
		s := b.env.Calls.Snapshot()
		b.env.Calls.Reset()
		return s
	}
	b.publish(t, event("evt_cost1", "content.published", "cms", map[string]any{}))
	require.Equal(t, map[string]int{"DynamoDB.TransactWriteItems": 1, "SQS.SendMessage": 1, "DynamoDB.UpdateItem": 1}, calls())

	b.publish(t, inquiry("evt_cost2"))
	require.Equal(t, map[string]int{"DynamoDB.TransactWriteItems": 1, "SQS.SendMessage": 2, "DynamoDB.UpdateItem": 2}, calls())

	b.publish(t, inquiry("evt_cost2"))
	require.Equal(t, map[string]int{"DynamoDB.TransactWriteItems": 1, "DynamoDB.Query": 1}, calls())
}

func TestMessageAttributesAndBody(t *testing.T) {
	t.Parallel()
	b := setup(t)
	raw := []byte(`{"id":"evt_attr","tenantId":"acme","type":"content.published","source":"cms","timestamp":"2026-12-02T11:59:00Z","subject":"page-1","payload":{"z":1,"a":[true,null]}}`)
	require.Equal(t, envelope.StatusEnqueued, b.publish(t, raw).Status)
	msgs := b.drain(t, topology.CachePurge)
	require.Len(t, msgs, 1)
	attrs := map[string]string{}
	for k, v := range msgs[0].MessageAttributes {
		attrs[k] = aws.ToString(v.StringValue)
	}
	require.Equal(t, map[string]string{"eventKey": "acme/evt_attr", "eventId": "evt_attr", "tenantId": "acme", "type": "content.published", "topic": topology.CachePurge}, attrs)
	ev, err := envelope.ParseMessage([]byte(aws.ToString(msgs[0].Body)))
	require.Nil(t, err)
	require.Equal(t, `{"z":1,"a":[true,null]}`, string(ev.Payload))
	require.Equal(t, "page-1", ev.Subject)
	require.Equal(t, 1, ev.SchemaVersion)
}

// Every envelope the validator accepts is sendable: text SQS refuses
// (U+FFFE, U+FFFF) or the local emulator refuses (characters above the
// BMP) travels \u-escaped, and the consumer reads the same value. Before,
// such an event was stored, answered "accepted", and never delivered.
func TestTextSQSRefusesIsStillDelivered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	payload := "{\"name\":\"Zoë 😀\",\"bad\":\"a\uFFFEb\uFFFFc\",\"astral\":\"\U0010FFFF𝄞\",\"ctl\":\"\\u0000\\u001f\\u007f\",\"lone\":\"\\ud800 \\udfff\",\"esc\":\"\\ufffe\"}"
	raw := []byte(`{"id":"evt_text","tenantId":"acme","type":"content.published","source":"cms","timestamp":"2026-12-02T11:59:00Z","subject":"Zoë 😀 page","payload":` + payload + `}`)
	orig, perr := envelope.Parse(raw, b.clock.Now(), envelope.DefaultLimits())
	require.Nil(t, perr)
	res := b.publish(t, raw)
	require.Equal(t, envelope.StatusEnqueued, res.Status, "%+v", res)

	msgs := b.drain(t, topology.CachePurge)
	require.Len(t, msgs, 1)
	body := aws.ToString(msgs[0].Body)
	for _, r := range body {
		require.True(t, r < 0x80 || canonjson.SQSSafe(r), "the body carries only what SQS takes: %U", r)
	}
	got, perr := envelope.ParseMessage([]byte(body))
	require.Nil(t, perr)
	want, err := canonjson.Canonical(orig.Payload)
	require.NoError(t, err)
	have, err := canonjson.Canonical(got.Payload)
	require.NoError(t, err)
	require.Equal(t, string(want), string(have), "the consumer reads the same payload value")
	require.Equal(t, orig.Subject, got.Subject)

	// The stored ledger item keeps the producer's exact bytes.
	rec, _, err := b.events.Load(context.Background(), key("evt_text"))
	require.NoError(t, err)
	require.Equal(t, string(orig.Payload), string(rec.Event.Payload))
}

// A stage that stored events before ids were scoped by tenant keeps
// deduplicating them while LegacyKeysUntil is ahead: a retry of an event
// stored under its bare id is a duplicate of it, for its own tenant only.
func TestLegacyKeysStillDeduplicate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// The event as the previous version stored it: under its bare id.
	ev, perr := envelope.Parse(inquiry("evt_legacy"), b.clock.Now(), envelope.DefaultLimits())
	require.Nil(t, perr)
	rec, rows := testkit.Stored(ev, []string{topology.Notifications, topology.CRM}, b.clock.Now(), outbox.StatusEnqueued)
	rec.Key = ledger.LegacyKey(ev.ID)
	for i := range rows {
		rows[i].Key = rec.Key
	}
	require.NoError(t, b.events.Commit(ctx, ingest.CommitParams{Record: rec, Rows: rows}))

	b.svc = b.with(t, func(c *ingest.Config) { c.LegacyKeysUntil = b.clock.Now().Add(14 * 24 * time.Hour) })
	res := b.publish(t, inquiry("evt_legacy"))
	require.Equal(t, envelope.StatusDuplicate, res.Status, "the legacy event is found")
	_, _, err := b.events.Load(ctx, key("evt_legacy"))
	require.ErrorIs(t, err, ledger.ErrNotFound, "nothing written under the new key")

	globex := []byte(strings.Replace(string(inquiry("evt_legacy")), `"tenantId":"acme"`, `"tenantId":"globex"`, 1))
	require.Equal(t, envelope.StatusEnqueued, b.publish(t, globex).Status, "another tenant's legacy id is not this tenant's event")

	b.svc = b.with(t, func(c *ingest.Config) { c.LegacyKeysUntil = time.Time{} })
	require.Equal(t, envelope.StatusEnqueued, b.publish(t, inquiry("evt_legacy")).Status, "past the window the legacy key is not checked")
}
