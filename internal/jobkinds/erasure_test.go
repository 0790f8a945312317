package jobkinds_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/kit/testkit"
	"github.com/siteswarm/eventplatform/internal/topology"
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
