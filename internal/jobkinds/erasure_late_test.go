package jobkinds_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/claimcheck"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
	"github.com/siteswarm/eventplatform/internal/replay"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/ingestfn"
	"github.com/siteswarm/eventplatform/internal/wire/jobsfn"
	"github.com/siteswarm/eventplatform/internal/wire/jobsworkerfn"
	"github.com/siteswarm/eventplatform/internal/wire/replayfn"
	"github.com/siteswarm/eventplatform/internal/wire/wiretest"
)

// Writers that come after the erasure (issue 32, the review of its
// mechanism): a producer's retry of an erased event, a replay that read
// an incident before the erasure redacted it, a tenant's upload while the
// erasure rewrites its file, a dead letter older than its event's ledger
// retention. None may leave a copy of the subject's data behind.

// stripeDelivery is the envelope webhook-stripe makes of a Stripe
// invoice.paid event about customer's invoice (its payload carrying
// email, padded past the claim-check threshold) on the event's attempt-th
// delivery: Stripe re-serializes an event on every retry (here
// pending_webhooks counts down), so each delivery's payload bytes, and so
// its claim-check key, differ while the event stays the same.
func stripeDelivery(t *testing.T, tenant, id, customer, email string, attempt int) []byte {
	t.Helper()
	created := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).Unix()
	obj := map[string]any{"id": "in_" + id, "object": "invoice", "customer": customer, "customer_email": email,
		"description": strings.Repeat("d", 4*claimCheckBytes)}
	body, err := json.Marshal(map[string]any{"id": id, "object": "event", "type": "invoice.paid", "created": created,
		"pending_webhooks": 4 - attempt, "data": map[string]any{"object": obj}})
	require.NoError(t, err)
	raw, err := json.Marshal(envelope.Event{SchemaVersion: envelope.SchemaVersion, ID: id, TenantID: tenant, Type: "stripe.invoice.paid",
		Source: "stripe", Subject: "in_" + id, Timestamp: time.Unix(created, 0).UTC(), Payload: body})
	require.NoError(t, err)
	return raw
}

func (b *bundle) publishRawAs(t *testing.T, raw []byte, want envelope.Status) {
	t.Helper()
	res, err := b.ingest.Publish(context.Background(), raw)
	require.NoError(t, err)
	require.Equal(t, want, res.Status, "%+v", res)
}

const customerEmail = "ann@customer-a.test"

// A Stripe retry before the erasure stored its (re-serialized) payload
// under a claim-check key of its own, which no ledger item references:
// the erasure deleted the ledger item's payload object only, and the
// retry's copy stayed until the payload lifecycle expired it. The
// erasure deletes every payload object stored for the event.
func TestErasureDeletesEveryDeliverysPayloadObject(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.publishRawAs(t, stripeDelivery(t, "gdpr", "evt_retried", "cus_A", customerEmail, 1), envelope.StatusEnqueued)
	b.publishRawAs(t, stripeDelivery(t, "gdpr", "evt_retried", "cus_A", customerEmail, 2), envelope.StatusDuplicate)
	require.Len(t, b.versionsUnder(t, claimcheck.Prefix("gdpr", "evt_retried")), 2, "each delivery stored its payload")

	j := b.run(t, jobs.StartParams{Kind: jobkinds.KindErasure, TenantID: "gdpr", Args: json.RawMessage(`{"subject":"cus_A"}`)})
	require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)
	require.Empty(t, b.env.Copies(t, customerEmail), "every delivery's payload object, every version")
}

// hookedEngine makes the bundle's job engine one whose DynamoDB and S3
// calls go through hooks (the engine jobs-worker builds, on the bundle's
// clock).
func (b *bundle) hookedEngine(t *testing.T, hooks ...*awslocaltest.Hook) {
	t.Helper()
	s := map[string]string{wire.EnvClaimCheckBytes: fmt.Sprint(claimCheckBytes), jobsfn.EnvJobsQueueURL: "", wire.EnvIngestFunction: ingestfn.Name}
	cfg, err := jobsworkerfn.Load(envconf.FromMap(wiretest.Environment(b.env, s)), b.env.Topology)
	require.NoError(t, err)
	cl := b.env.Data()
	cl.DynamoDB = dynamodb.New(cl.DynamoDB.Options(), func(o *dynamodb.Options) {
		for _, h := range hooks {
			o.APIOptions = append(o.APIOptions, h.APIOption)
		}
	})
	cl.S3 = s3.New(cl.S3.Options(), func(o *s3.Options) {
		for _, h := range hooks {
			o.APIOptions = append(o.APIOptions, h.APIOption)
		}
	})
	b.engine, err = jobsworkerfn.New(context.Background(), cfg, jobsworkerfn.Clients{Clients: cl, Lambda: b.env.Lambda},
		wire.Runtime{Now: b.clock.Now, Metrics: metric.Discard()})
	require.NoError(t, err)
}

// hookedReplay is the replay engine the replay function builds, its
// DynamoDB calls going through hook.
func (b *bundle) hookedReplay(t *testing.T, hook *awslocaltest.Hook) *replay.Service {
	t.Helper()
	cl := b.env.Data()
	cl.DynamoDB = dynamodb.New(cl.DynamoDB.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, hook.APIOption) })
	s := map[string]string{wire.EnvClaimCheckBytes: fmt.Sprint(claimCheckBytes)}
	svc, err := replayfn.NewServices(wiretest.ReplayConfig(t, b.env, wiretest.Opts{Settings: s}), cl, wire.Runtime{Metrics: metric.Discard()})
	require.NoError(t, err)
	return svc.Replay
}

// expiredIncident leaves an incident about ev (dead-lettered by a real
// consumer and archiver) whose event is past its ledger retention.
func (b *bundle) expiredIncident(t *testing.T, ev envelope.Event) incident.Incident {
	t.Helper()
	inc := b.archiveDeadLetter(t, ev)
	rec, _, err := b.env.Events().Load(context.Background(), eventKey(ev))
	require.NoError(t, err)
	b.expire(t, ev, rec.Topics...)
	return inc
}

// restores matches replay's restore of an expired event.
func restores(in any) bool {
	tx, ok := in.(*dynamodb.TransactWriteItemsInput)
	if !ok {
		return false
	}
	for _, it := range tx.TransactItems {
		if it.Put != nil {
			if sk, ok := it.Put.Item["sk"].(*ddbtypes.AttributeValueMemberS); ok && sk.Value == dynamo.LedgerSK {
				return true
			}
		}
	}
	return false
}

// Issue 32 review, item 1: a replay of an incident whose event is past its
// retention read the incident before the erasure redacted it and then
// restored the event's ledger item from the incident's body, payload and
// all, after the erasure: nothing erased it again. The restore is guarded
// by the incident (and the ledger item's marker) in its own transaction:
// refused, the replay writes and sends nothing, and the incident stays
// erased.
func TestAReplayOfAnErasedIncidentRestoresNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	ev := b.publishContact(t, "gdpr", "evt_replayed", "user-42", 10)
	inc := b.expiredIncident(t, ev)
	var erasure jobs.Job
	hook := &awslocaltest.Hook{Service: "DynamoDB", Operation: "TransactWriteItems", Before: true, Match: restores, Do: func() {
		erasure = b.run(t, jobs.StartParams{Kind: jobkinds.KindErasure, TenantID: "gdpr", Args: json.RawMessage(`{"subject":"user-42"}`)})
	}}
	out := b.hookedReplay(t, hook).ReplayOne(ctx, replay.Request{IncidentIDs: []string{inc.ID}}, inc.ID)
	require.True(t, hook.Ran())
	require.Equal(t, jobs.StatusCompleted, erasure.Status, erasure.Error)
	require.Equal(t, replay.ResultSkipped, out.Result, "%+v", out)
	require.Equal(t, replay.SkipErased, out.Reason)
	require.Empty(t, b.env.Copies(t, erasedEmail), "no ledger item restored from the incident")
	_, _, err := b.env.Events().Load(ctx, eventKey(ev))
	require.ErrorIs(t, err, ledger.ErrNotFound)
	got, err := b.env.Incidents().Get(ctx, inc.ID)
	require.NoError(t, err)
	require.True(t, got.IsErased(ledger.ErasedPayload), "the incident stays erased")
	require.Equal(t, incident.StatusOpen, got.Status, "not left retrying")
}

// A replay whose restore committed before the erasure redacted its
// incident wrote the event's ledger item back; the erasure's events
// passes do not list it when they ran before (here the incident is
// listed late, in the erasure's second pass over the incidents, after
// its second pass over the events). Redacting the incident, the erasure
// erases the event the incident is about, restored or not.
func TestTheErasureErasesWhatAReplayRestored(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	ev := b.publishContact(t, "gdpr", "evt_restored", "user-42", 10)
	inc := b.expiredIncident(t, ev)
	// The erasure's first pass over the incidents does not list it (its
	// index lags), the second does.
	stored, err := b.env.Incidents().Get(ctx, inc.ID)
	require.NoError(t, err)
	_, err = b.env.DynamoDB.DeleteItem(ctx, incidentKey(b, inc.ID))
	require.NoError(t, err)
	j := b.eraseUntil(t, "gdpr", "user-42", func(p erasurePhase) bool { return p.Phase == "recheck-incidents" })
	stored.Version = 0
	_, err = b.env.Incidents().Save(ctx, stored)
	require.NoError(t, err)

	// The replay restores the event as the erasure is about to redact the
	// incident.
	rp := b.hookedReplay(t, &awslocaltest.Hook{})
	redacts := &awslocaltest.Hook{Service: "DynamoDB", Operation: "TransactWriteItems", Before: true, Match: func(in any) bool {
		tx, ok := in.(*dynamodb.TransactWriteItemsInput)
		return ok && len(tx.TransactItems) == 2 && tx.TransactItems[1].Put != nil && aws.ToString(tx.TransactItems[1].Put.TableName) == b.env.Resources.IncidentsTable
	}, Do: func() {
		out := rp.ReplayOne(ctx, replay.Request{IncidentIDs: []string{inc.ID}}, inc.ID)
		require.Equal(t, replay.ResultReplayed, out.Result, "%+v", out)
	}}
	b.hookedEngine(t, redacts)
	j = b.finish(t, j.ID)
	require.True(t, redacts.Ran())
	require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)
	require.Empty(t, b.env.Copies(t, erasedEmail), "the restored ledger item")
	rec, rows, err := b.env.Events().Load(ctx, eventKey(ev))
	require.NoError(t, err)
	require.True(t, rec.Erased())
	for _, r := range rows {
		require.False(t, r.ErasedAt.IsZero(), "the restored row carries the marker: its message is never delivered")
	}
}

func incidentKey(b *bundle, id string) *dynamodb.DeleteItemInput {
	return &dynamodb.DeleteItemInput{TableName: aws.String(b.env.Resources.IncidentsTable),
		Key: map[string]ddbtypes.AttributeValue{"incidentId": &ddbtypes.AttributeValueMemberS{Value: id}}}
}

// Issue 32 follow-up: a dead letter can outlive its event's ledger item (a
// DLQ keeps a message 14 days from its first send, the ledger's retention
// is 14 days from the event's commit). With the dispatch row gone there
// was no erasure marker to refuse its incident, so a dead letter archived
// after the subject's erasure completed opened an incident holding the
// payload, which nothing erased. The archiver asks whether an erasure of
// the event's subject ran since the message was first sent: it did, and
// the dead letter is dropped before anything of it is stored.
func TestADeadLetterOutlivingItsLedgerItemOpensNoIncidentAfterTheErasure(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	ev := b.publishContact(t, "gdpr", "evt_outlived", "user-42", 10)
	dead := b.deadLetter(t)
	// The dead letter waits in the DLQ (its archiving failing, say) past
	// the event's ledger retention; the subject's erasure runs then.
	rec, _, err := b.env.Events().Load(ctx, eventKey(ev))
	require.NoError(t, err)
	b.clock.Advance(ledger.DefaultRetention)
	b.expire(t, ev, rec.Topics...)
	j := b.run(t, jobs.StartParams{Kind: jobkinds.KindErasure, TenantID: "gdpr", Args: json.RawMessage(`{"subject":"user-42"}`)})
	require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)

	resp, err := wiretest.Archiver(t, b.env, wiretest.Opts{}).Handle(ctx, lambdalocal.SQSEvent(b.env.Queue(topology.Notifications).DLQARN, dead))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures, "acknowledged: dropped, not retried")
	_, err = b.env.Incidents().Get(ctx, incident.ID(eventKey(ev), topology.Notifications))
	require.ErrorIs(t, err, incident.ErrNotFound, "no incident")
	require.Empty(t, b.env.Copies(t, erasedEmail), "no incident, body or payload copy")
}
