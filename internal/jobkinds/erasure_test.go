package jobkinds_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/handlers/deliver"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/replay"
	"github.com/siteswarm/eventplatform/internal/subject"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire/httpconsumerfn"
	"github.com/siteswarm/eventplatform/internal/wire/wiretest"
)

// The personal data of the erasure tests: it is in the subject's payloads
// only (not in its subject identifier, which jobs and evidence name), so
// any place it is still found after an erasure is a copy the erasure
// missed.
const erasedEmail = "user-42@example.test"

// publishContact ingests an internal event of subject whose payload
// carries erasedEmail, padded to about size bytes.
func (b *bundle) publishContact(t *testing.T, tenant, id, subject string, size int) envelope.Event {
	t.Helper()
	ev, raw := contact(t, tenant, id, subject, size)
	res, err := b.ingest.Publish(context.Background(), raw)
	require.NoError(t, err)
	require.Contains(t, []envelope.Status{envelope.StatusEnqueued, envelope.StatusAccepted}, res.Status, res)
	return ev
}

// contact is the envelope publishContact publishes, and its JSON.
func contact(t *testing.T, tenant, id, subject string, size int) (envelope.Event, []byte) {
	t.Helper()
	ev := envelope.Event{SchemaVersion: envelope.SchemaVersion, ID: id, TenantID: tenant, Type: "inquiry.created", Source: "storefront",
		Subject: subject, Timestamp: time.Now().UTC(),
		Payload: json.RawMessage(fmt.Sprintf(`{"email":%q,"notes":%q}`, erasedEmail, strings.Repeat("n", size)))}
	raw, err := json.Marshal(ev)
	require.NoError(t, err)
	return ev, raw
}

func eventKey(ev envelope.Event) string { return testkit.Key(ev) }

// keepIncident opens an incident about ev's dispatch to topic as the DLQ
// archiver does, its body stored in S3.
func (b *bundle) keepIncident(t *testing.T, ev envelope.Event, topic, errorMessage string) incident.Incident {
	t.Helper()
	ctx := context.Background()
	rec, _, err := b.env.Events().Load(ctx, eventKey(ev))
	require.NoError(t, err)
	body, err := rec.Event.Marshal()
	require.NoError(t, err)
	bodies := &incident.Bodies{Store: b.blobs, Bucket: b.env.Resources.Bucket, Threshold: 64}
	id := incident.ID(eventKey(ev), topic)
	kept, err := bodies.Keep(ctx, ev.TenantID, id, body)
	require.NoError(t, err)
	require.NotEmpty(t, kept.Key, "the incident body is stored")
	names := subject.Of(ev)
	inc, _, err := incident.Upsert(ctx, b.env.Recovery(), incident.DeadLetter{
		EventKey: eventKey(ev), EventID: ev.ID, TenantID: ev.TenantID, Topic: topic, Type: ev.Type, Source: ev.Source,
		Subject: names.Subject, Owner: names.Owner,
		SourceQueue: "dlq", MessageID: "m-" + ev.ID, ErrorCode: "subscriber_rejected", ErrorMessage: errorMessage, Body: kept, By: incident.ActorArchiver,
	}, time.Now().UTC())
	require.NoError(t, err)
	return inc
}

// Survivor 6 of issue 23: the bucket is versioned (locally as deployed), so
// a delete without a version id leaves the claim-checked payload and the
// incident body behind as noncurrent versions. After the erasure no
// object version and no table item anywhere holds the subject's data,
// and the evidence names each version id deleted.
func TestErasureLeavesNoObjectVersionBehind(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	big := b.publishContact(t, "gdpr", "evt_v_1", "user-42", 4*claimCheckBytes)
	b.publishContact(t, "gdpr", "evt_v_2", "user-42", 10)
	inc := b.keepIncident(t, big, topology.Notifications, "422")
	before := b.env.Copies(t, erasedEmail)
	require.NotEmpty(t, before)

	j := b.run(t, jobs.StartParams{Kind: jobkinds.KindErasure, TenantID: "gdpr", Args: json.RawMessage(`{"subject":"user-42"}`)})
	require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)
	require.Empty(t, b.env.Copies(t, erasedEmail), "every copy, every version")

	res := decode[jobkinds.ErasureResult](t, j.Result)
	require.Equal(t, 2, res.Erased)
	require.Equal(t, 2, res.ObjectsDeleted, "the payload object and the incident body")
	evidence, err := b.blobs.Get(ctx, b.env.Resources.Bucket, res.EvidenceKey)
	require.NoError(t, err)
	keys := map[string]bool{}
	for _, d := range res.Deletions {
		keys[d.Key] = true
		require.NotEmpty(t, d.VersionIDs, d.Key)
		for _, v := range d.VersionIDs {
			require.Contains(t, string(evidence), v)
		}
		left, err := b.blobs.Versions(ctx, d.Bucket, d.Key)
		require.NoError(t, err)
		require.Empty(t, left, d.Key)
	}
	require.True(t, keys[inc.Body.Key], "the incident body")
}

// syncBuffer collects log lines written from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Survivor 5 of issue 23: a subscriber answering "422 contact <email>
// already exists" put the email in the outbox row's lastError, the
// incident's errorMessage and history note, and the consumer's log line.
// Delivered for real (consumer-http against a local subscriber, the DLQ
// archiver on the DLQ): after the erasure no table item or object
// version holds the email, and no log line of the consumer or the
// archiver ever did (the answer is logged by length and hash).
func TestErasureRedactsTheSubscribersAnswerEverywhere(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	sub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = fmt.Fprintf(w, "contact %s already exists", erasedEmail)
	}))
	t.Cleanup(sub.Close)
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	ev := b.publishContact(t, "gdpr", "evt_422", "user-42", 10)
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("erasure-test-signing-secret"))
	c := wiretest.HTTPConsumer(t, b.env, topology.Notifications, wiretest.Opts{Log: log, Settings: map[string]string{
		httpconsumerfn.EnvSubscriberURL: sub.URL + "/hook", httpconsumerfn.EnvSecret: secret, httpconsumerfn.EnvTimeout: "2s",
	}})
	q := b.env.Queue(topology.Notifications)
	msgs := b.env.ReceiveAndDelete(ctx, q.URL, 1, 10*time.Second)
	require.Len(t, msgs, 1)
	resp, err := c.Handle(ctx, lambdalocal.SQSEvent(q.ARN, msgs))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures, "a 422 is poison: dead-lettered and acknowledged")
	dead := b.env.ReceiveAndDelete(ctx, q.DLQURL, 1, 10*time.Second)
	require.Len(t, dead, 1)
	resp, err = wiretest.Archiver(t, b.env, wiretest.Opts{Log: log}).Handle(ctx, lambdalocal.SQSEvent(q.DLQARN, dead))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)

	inc, err := b.env.Incidents().Get(ctx, incident.ID(eventKey(ev), topology.Notifications))
	require.NoError(t, err)
	require.Contains(t, inc.ErrorMessage, erasedEmail, "the operator sees the answer until the erasure")
	require.Contains(t, inc.History[0].Note, erasedEmail)
	_, rows, err := b.env.Events().Load(ctx, eventKey(ev))
	require.NoError(t, err)
	require.Contains(t, fmt.Sprint(rows), erasedEmail, "lastError")
	var attempts []outbox.Attempt
	for _, r := range rows {
		attempts = append(attempts, r.DeliveryAttempts...)
	}
	require.Len(t, attempts, 1, "the delivery attempt is kept")
	require.Equal(t, http.StatusUnprocessableEntity, attempts[0].Status)
	require.Equal(t, outbox.OutcomeDeadLettered, attempts[0].Outcome)
	require.Contains(t, attempts[0].Answer, erasedEmail, "with the subscriber's answer")
	require.Contains(t, logs.String(), "answer: ", "the answer is logged by its length and hash")

	j := b.run(t, jobs.StartParams{Kind: jobkinds.KindErasure, TenantID: "gdpr", Args: json.RawMessage(`{"subject":"user-42"}`)})
	require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)
	require.Empty(t, b.env.Copies(t, erasedEmail), "every copy, every version")
	require.NotContains(t, logs.String(), erasedEmail, "no log line quotes the answer or the payload")
	res := decode[jobkinds.ErasureResult](t, j.Result)
	require.Equal(t, 1, res.Erased)
	require.Equal(t, 1, res.Incidents)
	require.Equal(t, 1, res.Dispatches, "the notifications row's lastError")
	red, err := b.env.Incidents().Get(ctx, inc.ID)
	require.NoError(t, err)
	require.Equal(t, incident.ErasedText, red.ErrorMessage)
	require.Equal(t, deliver.CodeRejected, red.ErrorCode, "what happened stays")
	require.Equal(t, inc.Status, red.Status)
	_, rows, err = b.env.Events().Load(ctx, eventKey(ev))
	require.NoError(t, err)
	for _, r := range rows {
		for _, a := range r.DeliveryAttempts {
			require.Empty(t, a.Answer)
			require.True(t, a.AnswerErased, "the attempt says its answer was erased")
			require.Equal(t, http.StatusUnprocessableEntity, a.Status, "what happened stays")
		}
	}
}

// A subject is counted in characters, as the envelope counts it: 200 × é
// (400 bytes) is a subject ingest accepts, so erasure accepts it too;
// 256 characters or a control character are refused by both.
func TestErasureCountsTheSubjectInCharacters(t *testing.T) {
	t.Parallel()
	kind := jobkinds.Erasure(jobkinds.ErasureDeps{Bucket: "bucket"})
	args := func(s string) json.RawMessage {
		raw, err := json.Marshal(jobkinds.ErasureArgs{Subject: s})
		require.NoError(t, err)
		return raw
	}
	for _, s := range []string{strings.Repeat("é", 200), strings.Repeat("x", envelope.MaxSubjectLen), "user-42"} {
		require.True(t, envelope.ValidSubject(s), "ingest accepts it")
		require.NoError(t, kind.CheckArgs(args(s)), "%d bytes", len(s))
	}
	for _, s := range []string{"", strings.Repeat("é", envelope.MaxSubjectLen+1), "a\nb"} {
		require.False(t, envelope.ValidSubject(s))
		var re *jobs.RequestError
		require.ErrorAs(t, kind.CheckArgs(args(s)), &re, "%q", s)
		require.Equal(t, jobs.CodeInvalidArgs, re.Code)
	}
}

// publishStripe ingests a Stripe event about an object of a customer, as
// webhook-stripe canonicalizes it (the envelope subject is the object's
// id), whose payload carries email.
func (b *bundle) publishStripe(t *testing.T, tenant, id, typ, object, objectID, customer, email string) envelope.Event {
	t.Helper()
	obj := map[string]any{"id": objectID, "object": object, "customer": customer, "customer_email": email}
	body, err := json.Marshal(map[string]any{"id": id, "object": "event", "type": typ, "created": time.Now().Unix(), "data": map[string]any{"object": obj}})
	require.NoError(t, err)
	ev := envelope.Event{SchemaVersion: envelope.SchemaVersion, ID: id, TenantID: tenant, Type: "stripe." + typ, Source: "stripe",
		Subject: objectID, Timestamp: time.Now().UTC(), Payload: body}
	raw, err := json.Marshal(ev)
	require.NoError(t, err)
	res, err := b.ingest.Publish(context.Background(), raw)
	require.NoError(t, err)
	require.Contains(t, []envelope.Status{envelope.StatusEnqueued, envelope.StatusAccepted}, res.Status, res)
	return ev
}

// Who the subject of an event is: a Stripe event's envelope subject is
// its object's id, so erasing a Stripe customer by the envelope subject
// found the customer's own events and none of its invoices
// (customer_email stayed). The customer is a subject identifier of every
// event whose object names it: the erasure of cus_A finds A's invoice
// and subscription (through the owner index) and the incident of A's
// invoice, and leaves customer B's invoice alone; erasing B's invoice by
// its object id (the subject index) finds it.
func TestErasureOfAStripeCustomerFindsItsInvoices(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	const emailA, emailB = "ann@customer-a.test", "bob@customer-b.test"
	invoice := b.publishStripe(t, "gdpr", "evt_inv_a", "invoice.paid", "invoice", "in_a1", "cus_A", emailA)
	b.publishStripe(t, "gdpr", "evt_sub_a", "customer.subscription.updated", "subscription", "sub_a1", "cus_A", emailA)
	b.publishStripe(t, "gdpr", "evt_inv_b", "invoice.paid", "invoice", "in_b1", "cus_B", emailB)
	b.keepIncident(t, invoice, topology.Billing, "422")
	require.NotEmpty(t, b.env.Copies(t, emailA))

	j := b.run(t, jobs.StartParams{Kind: jobkinds.KindErasure, TenantID: "gdpr", Args: json.RawMessage(`{"subject":"cus_A"}`)})
	require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)
	require.Empty(t, b.env.Copies(t, emailA), "the customer's invoice and its incident: every copy, every version")
	require.NotEmpty(t, b.env.Copies(t, emailB), "another customer's invoice stays")
	res := decode[jobkinds.ErasureResult](t, j.Result)
	require.Equal(t, 2, res.Erased, "the invoice and the subscription")
	require.Equal(t, 1, res.Incidents)

	// The object id is a subject identifier as well.
	j = b.run(t, jobs.StartParams{Kind: jobkinds.KindErasure, TenantID: "gdpr", Args: json.RawMessage(`{"subject":"in_b1"}`)})
	require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)
	require.Empty(t, b.env.Copies(t, emailB))
	require.Equal(t, 1, decode[jobkinds.ErasureResult](t, j.Result).Erased)
}

// archiveDeadLetter delivers ev's notifications message to a subscriber
// answering 422 (real consumer-http) and archives the dead letter with
// the real DLQ archiver: an incident as production opens it.
func (b *bundle) archiveDeadLetter(t *testing.T, ev envelope.Event) incident.Incident {
	t.Helper()
	ctx := context.Background()
	dead := b.deadLetter(t)
	resp, err := wiretest.Archiver(t, b.env, wiretest.Opts{}).Handle(ctx, lambdalocal.SQSEvent(b.env.Queue(topology.Notifications).DLQARN, dead))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	inc, err := b.env.Incidents().Get(ctx, incident.ID(eventKey(ev), topology.Notifications))
	require.NoError(t, err)
	return inc
}

// deadLetter has a real consumer fail the notifications queue's one
// message (its subscriber answers 422) and returns it as the DLQ holds
// it, for the archiver.
func (b *bundle) deadLetter(t *testing.T) []sqstypes.Message {
	t.Helper()
	ctx := context.Background()
	sub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusUnprocessableEntity)
	}))
	t.Cleanup(sub.Close)
	c := wiretest.HTTPConsumer(t, b.env, topology.Notifications, wiretest.Opts{Settings: map[string]string{
		httpconsumerfn.EnvSubscriberURL: sub.URL + "/hook", httpconsumerfn.EnvSecret: "whsec_" + base64.StdEncoding.EncodeToString([]byte("erasure-test-signing-secret")), httpconsumerfn.EnvTimeout: "2s",
	}})
	q := b.env.Queue(topology.Notifications)
	msgs := b.env.ReceiveAndDelete(ctx, q.URL, 1, 10*time.Second)
	require.Len(t, msgs, 1)
	resp, err := c.Handle(ctx, lambdalocal.SQSEvent(q.ARN, msgs))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	dead := b.env.ReceiveAndDelete(ctx, q.DLQURL, 1, 10*time.Second)
	require.Len(t, dead, 1)
	return dead
}

// expire deletes an event's item collection, as DynamoDB's TTL does once
// the ledger retention has passed.
func (b *bundle) expire(t *testing.T, ev envelope.Event, topics ...string) {
	t.Helper()
	for _, sk := range append([]string{dynamo.LedgerSK}, dispatchSKs(topics)...) {
		_, err := b.env.DynamoDB.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{
			TableName: aws.String(b.env.Resources.EventsTable),
			Key:       map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: dynamo.EventPK(eventKey(ev))}, "sk": &ddbtypes.AttributeValueMemberS{Value: sk}},
		})
		require.NoError(t, err)
	}
}

func dispatchSKs(topics []string) []string {
	var out []string
	for _, tp := range topics {
		out = append(out, dynamo.DispatchSK(tp))
	}
	return out
}

// Survivor 3 of issue 23: erasure found incidents only through ledger
// items, and incidents are kept after their ledger item expired (TTL):
// such an incident kept the payload ("erased 0, incidentsRedacted 0").
// The archiver records the event's subject identifiers on the incident
// and the erasure finds it through the incidents table's subject index.
func TestErasureFindsIncidentsWhoseEventExpired(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	ev := b.publishContact(t, "gdpr", "evt_old", "user-42", 4*claimCheckBytes)
	inc := b.archiveDeadLetter(t, ev)
	require.Equal(t, "user-42", inc.Subject, "the archiver names the subject")
	b.expire(t, ev, topology.Notifications, topology.CRM)
	_, _, err := b.env.Events().Load(ctx, eventKey(ev))
	require.ErrorIs(t, err, ledger.ErrNotFound)
	require.NotEmpty(t, b.env.Copies(t, erasedEmail), "the incident (and the claim-checked payload, until its lifecycle) keep it")

	j := b.run(t, jobs.StartParams{Kind: jobkinds.KindErasure, TenantID: "gdpr", Args: json.RawMessage(`{"subject":"user-42"}`)})
	require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)
	res := decode[jobkinds.ErasureResult](t, j.Result)
	require.Equal(t, 1, res.Incidents)
	require.Equal(t, 0, res.Erased, "no ledger item is left to erase")
	red, err := b.env.Incidents().Get(ctx, inc.ID)
	require.NoError(t, err)
	require.True(t, red.IsErased(jobkinds.ErasedMarker))
	require.Empty(t, b.env.Copies(t, erasedEmail), "every copy, every version")
}

// messageOf picks the message of an event from msgs.
func messageOf(t *testing.T, msgs []sqstypes.Message, ev envelope.Event) sqstypes.Message {
	t.Helper()
	for _, m := range msgs {
		if strings.Contains(aws.ToString(m.Body), `"id":"`+ev.ID+`"`) {
			return m
		}
	}
	t.Fatalf("no message of %s", ev.ID)
	return sqstypes.Message{}
}

// Survivor 4 of issue 23: an event whose delivery was being retried at
// erasure time was delivered 5 more times with the original payload, and
// the DLQ archiver then opened a new incident with it. The erasure puts a
// marker on each outbox row, which the consumer's claim refuses (the
// happy path reads nothing more): after the job completed, a retried
// message and one received but not yet handled are acknowledged without
// reaching the subscriber, a dead letter still in the DLQ opens no
// incident, and a replay of the erased incident is refused and restores
// nothing.
func TestErasureStopsWhatIsInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	var code atomic.Int32
	var leaked atomic.Int32
	var erased atomic.Bool
	sub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if erased.Load() {
			leaked.Add(1)
		}
		_ = body
		w.WriteHeader(int(code.Load()))
	}))
	t.Cleanup(sub.Close)
	c := wiretest.HTTPConsumer(t, b.env, topology.Notifications, wiretest.Opts{Settings: map[string]string{
		httpconsumerfn.EnvSubscriberURL: sub.URL + "/hook", httpconsumerfn.EnvSecret: "whsec_" + base64.StdEncoding.EncodeToString([]byte("erasure-test-signing-secret")), httpconsumerfn.EnvTimeout: "2s",
	}})
	q := b.env.Queue(topology.Notifications)

	retried := b.publishContact(t, "gdpr", "evt_f1", "user-42", 10)
	held := b.publishContact(t, "gdpr", "evt_f2", "user-42", 10)
	msgs := b.env.ReceiveAndDelete(ctx, q.URL, 2, 10*time.Second)
	require.Len(t, msgs, 2)
	code.Store(http.StatusServiceUnavailable)
	m1, m2 := messageOf(t, msgs, retried), messageOf(t, msgs, held)
	resp, err := c.Handle(ctx, lambdalocal.SQSEvent(q.ARN, []sqstypes.Message{m1}))
	require.NoError(t, err)
	require.Len(t, resp.BatchItemFailures, 1, "a 503: retried later")
	inc := b.keepIncident(t, retried, topology.Notifications, "an earlier dead letter")

	code.Store(http.StatusUnprocessableEntity)
	deadEv := b.publishContact(t, "gdpr", "evt_f3", "user-42", 10)
	m3 := b.env.ReceiveAndDelete(ctx, q.URL, 1, 10*time.Second)
	require.Len(t, m3, 1)
	resp, err = c.Handle(ctx, lambdalocal.SQSEvent(q.ARN, m3))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures, "a 422: dead-lettered")
	dead := b.env.ReceiveAndDelete(ctx, q.DLQURL, 1, 10*time.Second)
	require.Len(t, dead, 1, "in the DLQ, not archived yet")

	j := b.run(t, jobs.StartParams{Kind: jobkinds.KindErasure, TenantID: "gdpr", Args: json.RawMessage(`{"subject":"user-42"}`)})
	require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)
	erased.Store(true)
	code.Store(http.StatusOK)

	// The retry and the held message arrive after the erasure.
	resp, err = c.Handle(ctx, lambdalocal.SQSEvent(q.ARN, []sqstypes.Message{m1, m2}))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures, "acknowledged")
	require.Zero(t, leaked.Load(), "nothing reached the subscriber after the erasure")

	resp, err = wiretest.Archiver(t, b.env, wiretest.Opts{}).Handle(ctx, lambdalocal.SQSEvent(q.DLQARN, dead))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures, "acknowledged")
	_, err = b.env.Incidents().Get(ctx, incident.ID(eventKey(deadEv), topology.Notifications))
	require.ErrorIs(t, err, incident.ErrNotFound, "no new incident")

	out := wiretest.Replay(t, b.env, wiretest.Opts{}).Replay.ReplayOne(ctx, replay.Request{IncidentIDs: []string{inc.ID}, Force: true, Actor: "ops"}, inc.ID)
	require.Equal(t, replay.ResultSkipped, out.Result, out)
	require.Equal(t, replay.SkipErased, out.Reason)
	for _, ev := range []envelope.Event{retried, held, deadEv} {
		rec, rows, err := b.env.Events().Load(ctx, eventKey(ev))
		require.NoError(t, err)
		require.JSONEq(t, string(jobkinds.ErasedMarker), string(rec.Event.Payload), ev.ID)
		for _, row := range rows {
			require.False(t, row.ErasedAt.IsZero(), "%s %s carries the marker", ev.ID, row.Topic)
		}
	}
	require.Empty(t, b.env.Copies(t, erasedEmail), "every copy, every version")
}

// A delivery holding a row when its event is erased may still answer
// (its lease bounds it): the erasure waits the lease out before it
// completes, then redacts what the delivery wrote (a subscriber's answer
// quoting the subject in lastError).
func TestErasureWaitsOutALiveDelivery(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	ev := b.publishContact(t, "gdpr", "evt_live", "user-42", 10)
	row := outbox.RowRef{Key: eventKey(ev), Topic: topology.Notifications}
	lease := b.clock.Now().Add(5 * time.Minute)
	claim, err := b.env.Events().BeginProcessing(ctx, consume.Processing{Row: row, EventID: ev.ID, TenantID: "gdpr", Type: ev.Type, Owner: "m-live", Until: lease, Now: b.clock.Now()})
	require.NoError(t, err)
	require.Equal(t, consume.Claimed, claim.State)

	j, _, err := b.engine.Start(ctx, jobs.StartParams{Kind: jobkinds.KindErasure, TenantID: "gdpr", Args: json.RawMessage(`{"subject":"user-42"}`)})
	require.NoError(t, err)
	for range 5 {
		_, err := b.engine.Sweep(ctx, time.Now().Add(10*time.Second))
		require.NoError(t, err)
	}
	j, err = b.engine.Get(ctx, j.ID)
	require.NoError(t, err)
	require.False(t, j.Status.Terminal(), "waiting for the live lease: %s", j.Status)

	// The delivery answers while the erasure waits: its answer quotes the
	// subject.
	// Its attempt's record quotes it too: the row carries the erasure
	// marker by now, so the attempt is recorded without the answer.
	answer := "contact " + erasedEmail + " already exists"
	require.NoError(t, b.env.Events().MarkRetry(ctx, consume.Release{Row: row, Owner: "m-live", LastError: "422 " + answer, RetryAt: b.clock.Now(), Now: b.clock.Now(),
		Attempt: outbox.Attempt{N: 1, At: b.clock.Now(), Delivery: outbox.DeliveryOriginal, Outcome: outbox.OutcomeDeadLettered, Status: 422, Answer: answer}, Log: claim.Log}))
	_, rows, err := b.env.Events().Load(ctx, eventKey(ev))
	require.NoError(t, err)
	var recorded []outbox.Attempt
	for _, r := range rows {
		recorded = append(recorded, r.DeliveryAttempts...)
	}
	require.Len(t, recorded, 1, "the attempt is kept")
	require.True(t, recorded[0].AnswerErased, "but not its answer, written after the erasure began")
	require.Equal(t, len(answer), recorded[0].AnswerBytes)
	require.Equal(t, 422, recorded[0].Status)
	b.clock.Advance(6 * time.Minute)
	j = b.finish(t, j.ID)
	require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)
	require.Empty(t, b.env.Copies(t, erasedEmail), "the answer written during the erasure is redacted too")
	require.Equal(t, 1, decode[jobkinds.ErasureResult](t, j.Result).Dispatches)
}

// publishAudit ingests an audit event of subject whose payload carries
// note (routed to audit.events, archived by consumer-archive).
func (b *bundle) publishAudit(t *testing.T, tenant, id, subj, note string) envelope.Event {
	t.Helper()
	ev := envelope.Event{SchemaVersion: envelope.SchemaVersion, ID: id, TenantID: tenant, Type: "audit.record.created", Source: "platform",
		Subject: subj, Timestamp: time.Now().UTC(), Payload: json.RawMessage(fmt.Sprintf(`{"note":%q}`, note))}
	raw, err := json.Marshal(ev)
	require.NoError(t, err)
	res, err := b.ingest.Publish(context.Background(), raw)
	require.NoError(t, err)
	require.Equal(t, envelope.StatusEnqueued, res.Status, res)
	return ev
}

// archive runs the real archive consumer over what the audit queue holds,
// twice (a retried batch writes its object again: a second version).
func (b *bundle) archive(t *testing.T, n int) {
	t.Helper()
	ctx := context.Background()
	q := b.env.Queue(topology.Audit)
	msgs := b.env.ReceiveAndDelete(ctx, q.URL, n, 10*time.Second)
	require.Len(t, msgs, n)
	c := wiretest.ArchiveConsumer(t, b.env, topology.Audit, wiretest.Opts{})
	for range 2 {
		// The second run finds the rows completed and writes nothing;
		// write the batch's object again as a retried batch does.
		resp, err := c.Handle(ctx, lambdalocal.SQSEvent(q.ARN, msgs))
		require.NoError(t, err)
		require.Empty(t, resp.BatchItemFailures)
	}
}

// Survivor 1 of issue 23: the audit archive
// (archive/audit.events/<yyyy>/<mm>/<dd>/gdpr/…ndjson) kept the subject's
// events after the erasure. The erasure rewrites each archive object
// holding the subject's records without them and deletes every earlier
// version by id; the other subjects' records of the object, and another
// tenant's archive, stay; the evidence names each object and the versions
// deleted.
func TestErasureRewritesTheAuditArchive(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	b.publishAudit(t, "gdpr", "aud_1", "user-42", erasedEmail)
	b.publishAudit(t, "gdpr", "aud_2", "user-42", erasedEmail)
	b.publishAudit(t, "gdpr", "aud_3", "user-7", "kept-record-of-user-7")
	b.publishAudit(t, "other", "aud_4", "user-42", "another-tenants-user-42")
	b.archive(t, 4)
	before := b.env.Copies(t, erasedEmail)
	require.NotEmpty(t, slices.DeleteFunc(before, func(s string) bool { return !strings.Contains(s, "/archive/") }), "the archive holds the subject: %v", before)

	j := b.run(t, jobs.StartParams{Kind: jobkinds.KindErasure, TenantID: "gdpr", Args: json.RawMessage(`{"subject":"user-42"}`)})
	require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)
	require.Empty(t, b.env.Copies(t, erasedEmail), "every copy, every version")
	require.NotEmpty(t, b.env.Copies(t, "kept-record-of-user-7"), "another subject's record stays in the rewritten object")
	require.NotEmpty(t, b.env.Copies(t, "another-tenants-user-42"), "another tenant's archive is not touched")

	res := decode[jobkinds.ErasureResult](t, j.Result)
	require.Equal(t, 1, res.Stores[jobkinds.StoreArchive], "one object of the day")
	require.GreaterOrEqual(t, res.RecordsRemoved, 2)
	raw, err := b.blobs.Get(ctx, b.env.Resources.Bucket, res.EvidenceKey)
	require.NoError(t, err)
	var evidence struct {
		Stores map[string]jobkinds.StoreEvidence `json:"stores"`
	}
	require.NoError(t, json.Unmarshal(raw, &evidence))
	for _, name := range []string{jobkinds.StoreLedger, jobkinds.StoreDispatches, jobkinds.StoreIncidents, jobkinds.StorePayloads, jobkinds.StoreIncidentObjects, jobkinds.StoreArchive, jobkinds.StoreExports} {
		require.Contains(t, evidence.Stores, name, "every store is listed")
	}
	arch := evidence.Stores[jobkinds.StoreArchive]
	require.Len(t, arch.Rewrites, 1)
	rw := arch.Rewrites[0]
	require.NotEmpty(t, rw.NewVersion, "the other subject's record is kept")
	require.NotEmpty(t, rw.VersionIDs)
	require.Equal(t, []string{rw.Key + "?" + rw.NewVersion}, b.versionsUnder(t, rw.Key), "only the rewritten version")
	for _, v := range rw.VersionIDs {
		require.NotEqual(t, rw.NewVersion, v)
	}
	require.Equal(t, 2, evidence.Stores[jobkinds.StoreLedger].Count, "the two gdpr events")
}

// Survivor 2 of issue 23: an earlier export's parts
// (jobs/<exportJob>/…/part-00001-events.ndjson.gz) kept the subject's
// lines forever. The erasure finds the tenant's finished exports, rewrites
// the parts holding the subject's events or incidents without them
// (every earlier version deleted) and the manifest's counts and
// checksums, naming itself there.
func TestErasureRewritesEarlierExports(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	ev := b.publishContact(t, "gdpr", "evt_x1", "user-42", 10)
	b.publishContact(t, "gdpr", "evt_x2", "user-42", 10)
	b.publish(t, "gdpr", "evt_x3", "kept-user-7", 10)
	b.keepIncident(t, ev, topology.Notifications, "422")
	exp := b.run(t, jobs.StartParams{Kind: jobkinds.KindExport, TenantID: "gdpr", Args: json.RawMessage(`{"pageSize":2}`)})
	require.Equal(t, jobs.StatusCompleted, exp.Status, exp.Error)
	manifestKey := decode[jobkinds.ExportResult](t, exp.Result).ManifestKey
	require.NotEmpty(t, slices.DeleteFunc(b.env.Copies(t, erasedEmail), func(s string) bool { return !strings.Contains(s, "/jobs/"+exp.ID+"/") }), "the export holds the subject")

	j := b.run(t, jobs.StartParams{Kind: jobkinds.KindErasure, TenantID: "gdpr", Args: json.RawMessage(`{"subject":"user-42"}`)})
	require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)
	require.Empty(t, b.env.Copies(t, erasedEmail), "every copy, every version")
	require.NotEmpty(t, slices.DeleteFunc(b.env.Copies(t, "kept-user-7"), func(s string) bool { return !strings.Contains(s, "/jobs/"+exp.ID+"/") }), "the other subject stays in the export")

	res := decode[jobkinds.ErasureResult](t, j.Result)
	require.Positive(t, res.Stores[jobkinds.StoreExports])
	require.Equal(t, 3, res.RecordsRemoved, "two events and the incident")
	raw, err := b.blobs.Get(ctx, b.env.Resources.Bucket, manifestKey)
	require.NoError(t, err)
	m := decode[jobkinds.ExportManifest](t, raw)
	require.Equal(t, 1, m.Events, "the other subject's event")
	require.Equal(t, 0, m.Incidents)
	require.Len(t, m.Erasures, 1)
	require.Equal(t, j.ID, m.Erasures[0].JobID)
	for _, p := range m.Parts {
		body, err := b.blobs.Get(ctx, b.env.Resources.Bucket, p.Key)
		require.NoError(t, err)
		sum := sha256.Sum256(body)
		require.Equal(t, p.SHA256, hex.EncodeToString(sum[:]), "the manifest's checksum of %s", p.Key)
	}
}

// Events published in a batch (the file import) whose consumers have not
// claimed them when they are erased: their sends are on the batch's
// receipt only, and a consumer refuses an erased row, so nothing else
// would ever record them. The erasure records them on the rows: once the
// receipt expires, the rows must not read as unsent (a duplicate publish
// would send the erased event again).
func TestErasureRecordsTheSendOfABatchPublishedEvent(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	ev1, raw1 := contact(t, "gdpr", "evt_rb1", "user-42", 10)
	ev2, raw2 := contact(t, "gdpr", "evt_rb2", "user-42", 10)
	for _, r := range b.ingest.PublishBatch(ctx, []json.RawMessage{raw1, raw2}) {
		require.Equal(t, envelope.StatusEnqueued, r.Status, r)
	}
	for _, ev := range []envelope.Event{ev1, ev2} {
		_, rows, err := b.env.Events().Load(ctx, eventKey(ev))
		require.NoError(t, err)
		for _, row := range rows {
			require.True(t, row.Receipted, "%s %s: the send is on the receipt", ev.ID, row.Topic)
		}
	}

	j := b.run(t, jobs.StartParams{Kind: jobkinds.KindErasure, TenantID: "gdpr", Args: json.RawMessage(`{"subject":"user-42"}`)})
	require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)

	// The receipts expire (TTL).
	out, err := b.env.DynamoDB.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(b.env.Resources.EventsTable)})
	require.NoError(t, err)
	receipts := 0
	for _, item := range out.Items {
		pk := item["pk"].(*ddbtypes.AttributeValueMemberS).Value
		if strings.HasPrefix(pk, "SENT#") {
			receipts++
			_, err := b.env.DynamoDB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(b.env.Resources.EventsTable),
				Key: map[string]ddbtypes.AttributeValue{"pk": item["pk"], "sk": item["sk"]}})
			require.NoError(t, err)
		}
	}
	require.Equal(t, 1, receipts, "one receipt for the batch")
	for _, ev := range []envelope.Event{ev1, ev2} {
		_, rows, err := b.env.Events().Load(ctx, eventKey(ev))
		require.NoError(t, err)
		require.NotEmpty(t, rows)
		for _, row := range rows {
			require.Equal(t, outbox.StatusEnqueued, row.Status, "%s %s", ev.ID, row.Topic)
			require.False(t, row.Receipted, "%s %s: recorded on the row", ev.ID, row.Topic)
			require.Empty(t, row.LeaseOwner, "%s %s", ev.ID, row.Topic)
			require.False(t, row.ErasedAt.IsZero(), "%s %s carries the marker", ev.ID, row.Topic)
		}
	}
}

// Issue 32 item 15: an erasure is keyed by its subject so that a new one
// supersedes the running one, but a start naming its own idempotencyKey
// got that key instead, and two erasures of one subject ran at once (each
// waiting, snoozing and rewriting the same objects). A key is refused for
// the kind; every erasure of a subject is the one job.
func TestTwoErasuresOfOneSubjectNeverRunAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	args := json.RawMessage(`{"subject":"user-42"}`)
	_, _, err := b.engine.Start(ctx, jobs.StartParams{Kind: jobkinds.KindErasure, TenantID: "gdpr", IdempotencyKey: "ticket-1234", Args: args})
	var re *jobs.RequestError
	require.ErrorAs(t, err, &re)
	require.Equal(t, jobs.CodeInvalidRequest, re.Code)
	require.Contains(t, re.Message, "idempotencyKey")

	first, created, err := b.engine.Start(ctx, jobs.StartParams{Kind: jobkinds.KindErasure, TenantID: "gdpr", Args: args})
	require.NoError(t, err)
	require.True(t, created)
	second, created, err := b.engine.Start(ctx, jobs.StartParams{Kind: jobkinds.KindErasure, TenantID: "gdpr", Args: args})
	require.NoError(t, err)
	require.False(t, created, "the same job, superseded")
	require.Equal(t, first.ID, second.ID)
	require.Equal(t, first.Generation+1, second.Generation)
	page, err := b.engine.List(ctx, jobs.ListParams{TenantID: "gdpr", Kind: jobkinds.KindErasure})
	require.NoError(t, err)
	require.Len(t, page.Jobs, 1, "one erasure of the subject")
}
