package jobkinds_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/deliver"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/kit/testkit"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
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
	ev := envelope.Event{SchemaVersion: envelope.SchemaVersion, ID: id, TenantID: tenant, Type: "inquiry.created", Source: "storefront",
		Subject: subject, Timestamp: time.Now().UTC(),
		Payload: json.RawMessage(fmt.Sprintf(`{"email":%q,"notes":%q}`, erasedEmail, strings.Repeat("n", size)))}
	raw, err := json.Marshal(ev)
	require.NoError(t, err)
	res, err := b.ingest.Publish(context.Background(), raw)
	require.NoError(t, err)
	require.Contains(t, []envelope.Status{envelope.StatusEnqueued, envelope.StatusAccepted}, res.Status, res)
	return ev
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
	inc, _, err := incident.Upsert(ctx, b.env.Incidents(), incident.DeadLetter{
		EventKey: eventKey(ev), EventID: ev.ID, TenantID: ev.TenantID, Topic: topic, Type: ev.Type, Source: ev.Source,
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
}

// A subject is counted in characters, as the envelope counts it: 200 × é
// (400 bytes) is a subject ingest accepts, so erasure accepts it too;
// 256 characters or a control character are refused by both.
func TestErasureCountsTheSubjectInCharacters(t *testing.T) {
	t.Parallel()
	kind := jobkinds.Erasure(nil, nil, "bucket")
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
