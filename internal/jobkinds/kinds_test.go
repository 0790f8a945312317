package jobkinds_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/secret"
	"github.com/siteswarm/eventplatform/internal/thirdparty/stripeapi"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	"github.com/siteswarm/eventplatform/internal/wire/jobsworkerfn"
)

func decode[T any](t *testing.T, raw []byte) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(raw, &v), string(raw))
	return v
}

// A tenant export over three pages of events (one claim-checked) and an
// incident, with the jobs table failing the commits of two steps: the
// parts those attempts wrote are orphans, the manifest lists only
// committed parts, every event appears exactly once with its payload
// rehydrated, and each part's size and sha256 match the object.
func TestExportSurvivesFailedCommitsAndListsEachRecordOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	for i := range 7 {
		size := 10
		if i == 3 {
			size = 4 * claimCheckBytes
		}
		b.publish(t, "acme", fmt.Sprintf("evt_exp_%d", i), fmt.Sprintf("c%d", i), size)
	}
	b.publish(t, "globex", "evt_other", "c9", 10)
	testkit.SeedDeadLetter(t, b.env, testkit.DeadLetter{EventID: "evt_dead", TenantID: "acme", Topic: topology.Billing, Created: time.Now().UTC()})

	// A step's commit is the job item's put that leaves it not running
	// with a step more (a claim puts it running).
	commits := 0
	b.env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "PutItem", Resource: b.env.Resources.JobsTable, Times: 2, Match: func(in any) bool {
		p, ok := in.(*dynamodb.PutItemInput)
		if !ok {
			return false
		}
		body, _ := p.Item["job"].(*ddbtypes.AttributeValueMemberS)
		if body == nil {
			return false
		}
		var j jobs.Job
		if json.Unmarshal([]byte(body.Value), &j) != nil || j.Status == jobs.StatusRunning || j.Steps == 0 {
			return false
		}
		commits++
		return commits == 2 || commits == 4
	}})
	j := b.run(t, jobs.StartParams{Kind: jobkinds.KindExport, TenantID: "acme", Args: json.RawMessage(`{"pageSize":3}`)})
	require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)
	require.Equal(t, 2, b.env.Faults.Injected("PutItem"), "two commits failed")
	res := decode[jobkinds.ExportResult](t, j.Result)
	require.Equal(t, 8, res.Events, "7 published + the dead-lettered one")
	require.Equal(t, 1, res.Incidents)

	raw, err := b.blobs.Get(ctx, b.env.Resources.Bucket, res.ManifestKey)
	require.NoError(t, err)
	m := decode[jobkinds.ExportManifest](t, raw)
	require.Equal(t, "acme", m.TenantID)
	seen := map[string]int{}
	total := 0
	for _, p := range m.Parts {
		obj, err := b.blobs.Get(ctx, b.env.Resources.Bucket, p.Key)
		require.NoError(t, err)
		sum := sha256.Sum256(obj)
		require.Equal(t, hex.EncodeToString(sum[:]), p.SHA256, p.Key)
		require.Len(t, obj, p.Bytes)
		zr, err := gzip.NewReader(bytes.NewReader(obj))
		require.NoError(t, err)
		plain, err := io.ReadAll(zr)
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSpace(string(plain)), "\n")
		require.Len(t, lines, p.Count)
		total += p.Bytes
		for _, l := range lines {
			var rec struct {
				ID         string               `json:"id"`
				EventID    string               `json:"eventId"`
				Payload    json.RawMessage      `json:"payload"`
				PayloadRef *envelope.PayloadRef `json:"payloadRef"`
			}
			require.NoError(t, json.Unmarshal([]byte(l), &rec))
			if p.Records == "events" {
				seen[rec.ID]++
				require.Nil(t, rec.PayloadRef, "payloads are rehydrated")
				require.NotEmpty(t, rec.Payload)
				if rec.ID == "evt_exp_3" {
					require.Greater(t, len(rec.Payload), 4*claimCheckBytes, "the claim-checked payload in full")
				}
			} else {
				seen["incident:"+rec.EventID]++
			}
		}
	}
	require.Equal(t, total, m.Bytes)
	want := map[string]int{"evt_dead": 1, "incident:evt_dead": 1}
	for i := range 7 {
		want[fmt.Sprintf("evt_exp_%d", i)] = 1
	}
	require.Equal(t, want, seen, "each record once, nothing of another tenant")
}

// Erasing a subject: its events' payloads (one claim-checked) and its
// incident's stored body are redacted and their objects deleted and
// confirmed absent (evidence in S3); another subject is untouched; a late
// duplicate of an erased event is acknowledged, not re-ingested; erasing
// again supersedes by generation and finds nothing left to erase.
func TestSubjectErasureRedactsDeletesAndProvesIt(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	original := b.publish(t, "acme", "evt_er_1", "cus_gone", 10)
	b.publish(t, "acme", "evt_er_2", "cus_gone", 4*claimCheckBytes)
	b.publish(t, "acme", "evt_er_3", "cus_kept", 10)
	key := func(id string) string {
		return testkit.Key(envelope.Event{ID: id, TenantID: "acme", Source: "storefront"})
	}
	rec, _, err := b.env.Events().Load(ctx, key("evt_er_2"))
	require.NoError(t, err)
	require.NotNil(t, rec.Event.PayloadRef, "claim-checked")
	payloadKey := rec.Event.PayloadRef.Key

	// An incident about the subject's claim-checked event (its notifications
	// dispatch dead-lettered), with its body kept in S3.
	bodies := &incident.Bodies{Store: b.blobs, Bucket: b.env.Resources.Bucket, Threshold: 64}
	body, err := rec.Event.Marshal()
	require.NoError(t, err)
	incID := incident.ID(key("evt_er_2"), topology.Notifications)
	kept, err := bodies.Keep(ctx, "acme", incID, body)
	require.NoError(t, err)
	require.NotEmpty(t, kept.Key, "the incident body is stored")
	inc, _, err := incident.Upsert(ctx, b.env.Recovery(), incident.DeadLetter{
		EventKey: key("evt_er_2"), EventID: "evt_er_2", TenantID: "acme", Topic: topology.Notifications, Type: rec.Event.Type, Source: rec.Event.Source,
		SourceQueue: "dlq", MessageID: "m-1", ErrorCode: "subscriber_rejected", ErrorMessage: "422", Body: kept, By: incident.ActorArchiver,
	}, time.Now().UTC())
	require.NoError(t, err)

	start := jobs.StartParams{Kind: jobkinds.KindErasure, TenantID: "acme", Args: json.RawMessage(`{"subject":"cus_gone"}`)}
	j := b.run(t, start)
	require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)
	res := decode[jobkinds.ErasureResult](t, j.Result)
	require.Equal(t, 2, res.Erased)
	require.Equal(t, 1, res.Incidents)
	require.Equal(t, 2, res.ObjectsDeleted, "the payload object and the incident body")
	deleted := map[string]bool{}
	for _, d := range res.Deletions {
		deleted[d.Key] = true
		require.False(t, d.ConfirmedAbsent.IsZero())
		left, err := b.blobs.Versions(ctx, d.Bucket, d.Key)
		require.NoError(t, err)
		require.Empty(t, left, d.Key)
	}
	require.True(t, deleted[payloadKey])
	require.True(t, deleted[inc.Body.Key])
	evidence, err := b.blobs.Get(ctx, b.env.Resources.Bucket, res.EvidenceKey)
	require.NoError(t, err)
	require.Contains(t, string(evidence), payloadKey)

	for _, id := range []string{"evt_er_1", "evt_er_2"} {
		r, _, err := b.env.Events().Load(ctx, key(id))
		require.NoError(t, err)
		require.JSONEq(t, string(ledger.ErasedPayload), string(r.Event.Payload), id)
		require.Nil(t, r.Event.PayloadRef, id)
		require.NotEmpty(t, r.PayloadHash, "the content hash stays")
	}
	other, _, err := b.env.Events().Load(ctx, key("evt_er_3"))
	require.NoError(t, err)
	require.Contains(t, string(other.Event.Payload), "cus_kept")
	red, err := b.env.Incidents().Get(ctx, inc.ID)
	require.NoError(t, err)
	require.JSONEq(t, string(ledger.ErasedPayload), string(red.Body.Inline))
	require.Empty(t, red.Body.Key)

	// A late duplicate of an erased event: acknowledged, not re-ingested.
	out, err := b.ingest.Publish(ctx, original)
	require.NoError(t, err)
	require.Equal(t, envelope.StatusDuplicate, out.Status)
	r1, _, err := b.env.Events().Load(ctx, key("evt_er_1"))
	require.NoError(t, err)
	require.JSONEq(t, string(ledger.ErasedPayload), string(r1.Event.Payload), "still erased")

	// A new erasure of the subject supersedes the finished one.
	again, created, err := b.engine.Start(ctx, start)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, j.ID, again.ID)
	require.Equal(t, j.Generation+1, again.Generation)
	j2 := b.finish(t, again.ID)
	require.Equal(t, jobs.StatusCompleted, j2.Status, j2.Error)
	res2 := decode[jobkinds.ErasureResult](t, j2.Result)
	require.Zero(t, res2.Erased, "nothing left")
	require.Zero(t, res2.ObjectsDeleted)
}

// Reconciliation end to end with stripe-go against a local Stripe events
// API: of three events (one of a type the topology does not route, so not
// listed), the webhook delivered one; the job publishes the missed one
// through ingest and acknowledges the delivered one.
func TestReconcilePublishesWhatTheWebhookMissed(t *testing.T) {
	t.Parallel()
	api := &stripeapi.LocalEvents{Key: "sk_test_reconcile"}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	b := setup(t, map[string]string{
		jobsworkerfn.EnvStripeAPIBaseURL: srv.URL,
		jobsworkerfn.EnvStripeAPIKey:     "sk_test_reconcile",
		jobsworkerfn.EnvStripeTenantMap:  `{"default":"acme"}`,
	})
	fixture, err := os.ReadFile("../../events/stripe/invoice.paid.json")
	require.NoError(t, err)
	event := func(id, typ string) []byte {
		var ev map[string]any
		require.NoError(t, json.Unmarshal(fixture, &ev))
		ev["id"], ev["type"], ev["created"] = id, typ, time.Now().Unix()
		raw, err := json.Marshal(ev)
		require.NoError(t, err)
		require.NoError(t, api.Add(raw))
		return raw
	}
	delivered := event("evt_rec_delivered", "invoice.paid")
	event("evt_rec_missed", "invoice.payment_failed")
	event("evt_rec_customer", "customer.created")

	// The webhook's delivery of the first, canonicalized as the adapter
	// does.
	ev, err := stripe.New(secret.List{}, webhook.TenantMap{Default: "acme"}, logging.Discard()).Canonicalize(context.Background(), webhook.Delivery{Body: delivered})
	require.NoError(t, err)
	body, err := webhook.Encode(ev)
	require.NoError(t, err)
	first, err := b.ingest.Publish(context.Background(), body)
	require.NoError(t, err)
	require.Equal(t, envelope.StatusEnqueued, first.Status)

	today := time.Now().UTC().Format(time.DateOnly)
	j := b.run(t, jobs.StartParams{Kind: jobkinds.KindReconcile, TenantID: "platform", IdempotencyKey: today, Args: json.RawMessage(`{"date":"` + today + `","lookbackDays":1}`)})
	require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)
	require.Equal(t, jobkinds.ReconcileResult{Published: 1, Duplicates: 1}, decode[jobkinds.ReconcileResult](t, j.Result),
		"customer.created is not routed, so not listed")
	rec, _, err := b.env.Events().Load(context.Background(), "evt_rec_missed")
	require.NoError(t, err)
	require.Equal(t, "stripe.invoice.payment_failed", rec.Event.Type)
	require.Equal(t, []string{topology.Billing}, rec.Topics)
}

// Without a Stripe key, reconciliation fails with a clear code and opens
// an incident (one queue of problems).
func TestReconcileWithoutAKeyFailsIntoAnIncident(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	j := b.run(t, jobs.StartParams{Kind: jobkinds.KindReconcile, TenantID: "platform", Args: json.RawMessage(`{"date":"2026-12-01"}`)})
	require.Equal(t, jobs.StatusFailed, j.Status)
	require.Equal(t, "stripe_not_configured", j.Error.Code)
	require.NotEmpty(t, j.IncidentID)
	inc, err := b.env.Incidents().Get(context.Background(), j.IncidentID)
	require.NoError(t, err)
	require.Equal(t, incident.StatusOpen, inc.Status)
}
