package jobkinds_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/retention"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/jobsfn"
	"github.com/siteswarm/eventplatform/internal/wire/wiretest"
)

// ingestAt is ingest on a clock stopped at at: the events it accepts are
// created then.
func (b *bundle) ingestAt(t *testing.T, at time.Time) *ingest.Service {
	t.Helper()
	s := map[string]string{wire.EnvClaimCheckBytes: fmt.Sprint(claimCheckBytes), jobsfn.EnvJobsQueueURL: ""}
	return wiretest.Ingest(t, b.env, wiretest.Opts{Settings: s, Now: func() time.Time { return at }})
}

func publishWith(t *testing.T, svc *ingest.Service, tenant, id string, size int) envelope.Event {
	t.Helper()
	ev := envelope.Event{SchemaVersion: envelope.SchemaVersion, ID: id, TenantID: tenant, Type: "inquiry.created", Source: "storefront",
		Subject: "s-" + id, Timestamp: time.Now().UTC(),
		Payload: json.RawMessage(fmt.Sprintf(`{"marker":%q,"notes":%q}`, "data-of-"+id, strings.Repeat("n", size)))}
	raw, err := json.Marshal(ev)
	require.NoError(t, err)
	res, err := svc.Publish(context.Background(), raw)
	require.NoError(t, err)
	require.Contains(t, []envelope.Status{envelope.StatusEnqueued, envelope.StatusAccepted}, res.Status, res)
	return ev
}

// incidentAt opens an incident about ev's dispatch to audit.events (body in
// S3) last failed at failed, then moves it to status at resolved.
func (b *bundle) incidentAt(t *testing.T, ev envelope.Event, failed time.Time, status incident.Status, resolved time.Time) incident.Incident {
	t.Helper()
	ctx := context.Background()
	body, err := json.Marshal(ev)
	require.NoError(t, err)
	bodies := &incident.Bodies{Store: b.blobs, Bucket: b.env.Resources.Bucket, Threshold: 64}
	id := incident.ID(eventKey(ev), topology.Audit)
	kept, err := bodies.Keep(ctx, ev.TenantID, id, body)
	require.NoError(t, err)
	require.NotEmpty(t, kept.Key)
	inc, _, err := incident.Upsert(ctx, b.env.Recovery(), incident.DeadLetter{
		EventKey: eventKey(ev), EventID: ev.ID, TenantID: ev.TenantID, Topic: topology.Audit, Type: ev.Type, Source: ev.Source,
		SourceQueue: "dlq", MessageID: "m-" + ev.ID, ErrorCode: "subscriber_rejected", ErrorMessage: "rejected", Body: kept, By: incident.ActorArchiver,
	}, failed)
	require.NoError(t, err)
	if status != incident.StatusOpen {
		inc.Status, inc.ResolvedAt, inc.UpdatedAt = status, resolved, resolved
		inc, err = b.env.Incidents().Save(ctx, inc)
		require.NoError(t, err)
	}
	return inc
}

// putVersions writes key twice (two versions on the versioned bucket).
func (b *bundle) putVersions(t *testing.T, key string) {
	t.Helper()
	for i := range 2 {
		require.NoError(t, b.blobs.Put(context.Background(), b.env.Resources.Bucket, key, []byte(fmt.Sprintf(`{"v":%d,"of":%q}`, i, key))))
	}
}

// versionsUnder lists every stored version under prefix.
func (b *bundle) versionsUnder(t *testing.T, prefix string) []string {
	t.Helper()
	out, err := b.env.S3.ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{Bucket: aws.String(b.env.Resources.Bucket), Prefix: aws.String(prefix)})
	require.NoError(t, err)
	var keys []string
	for _, v := range out.Versions {
		keys = append(keys, aws.ToString(v.Key)+"?"+aws.ToString(v.VersionId))
	}
	for _, m := range out.DeleteMarkers {
		keys = append(keys, aws.ToString(m.Key)+"?"+aws.ToString(m.VersionId)+"(marker)")
	}
	return keys
}

// A policy that shortens every period starts a purge at once, which
// deletes what is past it from every store — events with their outbox
// rows and claim-checked payloads (every version), resolved and ignored
// incidents with their bodies, the tenant's archive days, its old
// exports — and nothing younger, nothing open, nothing of another tenant.
// An auditor's search of every table item and object version finds no
// copy of a purged event's data outside the purge's own evidence.
func TestRetentionExpiryAppliesAShortenedPolicyToEveryStore(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	wall := b.clock.Now().UTC()
	now := wall.Add(31 * 24 * time.Hour) // the purge runs a month on
	old, recent := b.ingestAt(t, wall), b.ingestAt(t, now.Add(-24*time.Hour))

	// Events: 120 old ones of acme (more than a step's page; one
	// claim-checked), recent ones, and old ones of another tenant.
	var oldEvents []envelope.Event
	for i := range 120 {
		size := 10
		if i == 0 {
			size = 4 * claimCheckBytes
		}
		oldEvents = append(oldEvents, publishWith(t, old, "acme", fmt.Sprintf("evt-old-%03d", i), size))
	}
	keptEvent := publishWith(t, recent, "acme", "evt-recent", 10)
	otherEvent := publishWith(t, old, "globex", "evt-globex", 10)
	bigRec, err := b.env.Events().Record(ctx, eventKey(oldEvents[0]))
	require.NoError(t, err)
	require.NotNil(t, bigRec.Event.PayloadRef, "the first old event is claim-checked")

	// Incidents: resolved and ignored long ago (purged); resolved
	// recently, open, and another tenant's (kept).
	purgedInc := b.incidentAt(t, oldEvents[1], wall, incident.StatusResolved, wall.Add(time.Hour))
	ignoredInc := b.incidentAt(t, oldEvents[2], wall, incident.StatusIgnored, wall.Add(time.Hour))
	lateInc := b.incidentAt(t, oldEvents[3], wall, incident.StatusResolved, now.Add(-24*time.Hour))
	openInc := b.incidentAt(t, oldEvents[4], wall, incident.StatusOpen, time.Time{})
	otherInc := b.incidentAt(t, otherEvent, wall, incident.StatusResolved, wall.Add(time.Hour))

	// Archives: an old day of acme (two versions), the same day of
	// globex, and a recent day of acme.
	day := func(t time.Time) string { return t.UTC().Format("2006/01/02") }
	oldArchive := "archive/" + topology.Audit + "/" + day(wall.Add(-48*time.Hour)) + "/acme/000000-a.ndjson"
	otherArchive := "archive/" + topology.Audit + "/" + day(wall.Add(-48*time.Hour)) + "/globex/000000-b.ndjson"
	recentArchive := "archive/" + topology.Audit + "/" + day(now.Add(-24*time.Hour)) + "/acme/000000-c.ndjson"
	for _, k := range []string{oldArchive, otherArchive, recentArchive} {
		b.putVersions(t, k)
	}

	// Exports: one finished a month ago (purged), one today (kept).
	oldExport := b.run(t, jobs.StartParams{Kind: jobkinds.KindExport, TenantID: "acme", IdempotencyKey: "old-export"})
	require.Equal(t, jobs.StatusCompleted, oldExport.Status, oldExport.Error)
	require.NotEmpty(t, b.versionsUnder(t, jobs.ObjectPrefix+oldExport.ID+"/"))
	b.clock.Set(now)
	newExport := b.run(t, jobs.StartParams{Kind: jobkinds.KindExport, TenantID: "acme", IdempotencyKey: "new-export"})
	require.Equal(t, jobs.StatusCompleted, newExport.Status, newExport.Error)

	svc, err := retention.New(retention.Config{MaxEventDays: 14}, retention.Deps{
		Store: &dynamo.Retention{Client: b.env.DynamoDB, Table: b.env.Resources.JobsTable}, Jobs: b.engine, Now: b.clock.Now})
	require.NoError(t, err)
	v, err := svc.Set(ctx, retention.SetParams{TenantID: "acme", EventsDays: 7, IncidentsDays: 30, ArchivesDays: 30, ExportsDays: 30, Actor: "test"})
	require.NoError(t, err)
	require.NotNil(t, v.Purge, "a shortened policy starts its purge")
	require.Equal(t, 1, v.Policy.Version)
	job := b.finish(t, v.Purge.ID)
	require.Equal(t, jobs.StatusCompleted, job.Status, job.Error)
	require.Greater(t, job.Steps, 2, "bounded steps")

	var res jobkinds.RetentionResult
	require.NoError(t, json.Unmarshal(job.Result, &res))
	require.Equal(t, 120, res.Events)
	require.Equal(t, 1, res.Payloads)
	require.Equal(t, 2, res.Incidents)
	require.Equal(t, 2, res.IncidentObjects, "the two incidents' bodies")
	require.Equal(t, 2, res.ArchiveObjects, "both versions of the old archive object")
	require.Equal(t, 1, res.Exports)
	require.Positive(t, res.ExportObjects)
	require.Equal(t, 1, res.PolicyVersion)

	// Events: the old ones are gone with their rows; the others stay.
	for _, ev := range oldEvents {
		_, err := b.env.Events().Record(ctx, eventKey(ev))
		require.ErrorIs(t, err, ledger.ErrNotFound, ev.ID)
	}
	for _, ev := range []envelope.Event{keptEvent, otherEvent} {
		_, err := b.env.Events().Record(ctx, eventKey(ev))
		require.NoError(t, err, ev.ID)
	}
	require.Empty(t, b.versionsUnder(t, bigRec.Event.PayloadRef.Key), "every version of the claim-checked payload")

	// Incidents.
	for _, inc := range []incident.Incident{purgedInc, ignoredInc} {
		_, err := b.env.Incidents().Get(ctx, inc.ID)
		require.ErrorIs(t, err, incident.ErrNotFound, inc.ID)
		require.Empty(t, b.versionsUnder(t, inc.Body.Key))
	}
	for _, inc := range []incident.Incident{lateInc, openInc, otherInc} {
		_, err := b.env.Incidents().Get(ctx, inc.ID)
		require.NoError(t, err, inc.ID)
		require.NotEmpty(t, b.versionsUnder(t, inc.Body.Key))
	}

	// Archives and exports.
	require.Empty(t, b.versionsUnder(t, oldArchive))
	require.Len(t, b.versionsUnder(t, otherArchive), 2)
	require.Len(t, b.versionsUnder(t, recentArchive), 2)
	require.Empty(t, b.versionsUnder(t, jobs.ObjectPrefix+oldExport.ID+"/"))
	require.NotEmpty(t, b.versionsUnder(t, jobs.ObjectPrefix+newExport.ID+"/"))

	// An auditor's search: a purged event's data is nowhere but in the
	// new export (made after, from what was then stored: it is purged at
	// its own time), and its key only in the purge's evidence.
	for _, ev := range []envelope.Event{oldEvents[0], oldEvents[1], oldEvents[119]} {
		for _, where := range b.env.Copies(t, "data-of-"+ev.ID) {
			require.Contains(t, where, jobs.ObjectPrefix+newExport.ID+"/", "a copy of %s survived the purge", ev.ID)
		}
	}

	// Evidence: the object names the result, the parts every deletion.
	ev, err := b.blobs.Get(ctx, b.env.Resources.Bucket, res.EvidenceKey)
	require.NoError(t, err)
	require.Contains(t, string(ev), `"eventsDeleted": 120`)
	listed := map[string]int{}
	for _, part := range res.EvidenceParts {
		body, err := b.blobs.Get(ctx, b.env.Resources.Bucket, part)
		require.NoError(t, err)
		for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
			var e struct {
				Store string `json:"store"`
				Key   string `json:"key"`
			}
			require.NoError(t, json.Unmarshal([]byte(line), &e))
			listed[e.Store]++
		}
	}
	require.Equal(t, map[string]int{"events": 120, "payloads": 1, "incidents": 2, "incidentObjects": 2, "archives": 2, "exports": res.ExportObjects},
		maps.Clone(listed))

	// Running it again finds nothing more.
	again := b.run(t, jobs.StartParams{Kind: jobkinds.KindRetention, TenantID: "acme", IdempotencyKey: "again"})
	require.Equal(t, jobs.StatusCompleted, again.Status, again.Error)
	var res2 jobkinds.RetentionResult
	require.NoError(t, json.Unmarshal(again.Result, &res2))
	require.Zero(t, res2.Events+res2.Incidents+res2.ArchiveObjects+res2.ExportObjects)
}

// An export says until when it is kept: the tenant's exportsDays, which
// the retention expiry applies; a tenant without a period keeps exports
// (no expiry said).
func TestExportsExpireByTheTenantsPolicy(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	b.publish(t, "acme", "evt_exp_1", "s-1", 10)
	kept := b.run(t, jobs.StartParams{Kind: jobkinds.KindExport, TenantID: "acme"})
	require.Equal(t, jobs.StatusCompleted, kept.Status, kept.Error)
	require.Zero(t, decode[jobkinds.ExportResult](t, kept.Result).ExpiresAt, "kept: no expiry")

	svc, err := retention.New(retention.Config{MaxEventDays: 14}, retention.Deps{
		Store: &dynamo.Retention{Client: b.env.DynamoDB, Table: b.env.Resources.JobsTable}, Now: b.clock.Now})
	require.NoError(t, err)
	_, err = svc.Set(ctx, retention.SetParams{TenantID: "acme", ExportsDays: 30, Actor: "test"})
	require.NoError(t, err)
	j := b.run(t, jobs.StartParams{Kind: jobkinds.KindExport, TenantID: "acme", IdempotencyKey: "second"})
	require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)
	res := decode[jobkinds.ExportResult](t, j.Result)
	require.WithinDuration(t, time.Now().Add(30*retention.Day), res.ExpiresAt, time.Hour)
	raw, err := b.blobs.Get(ctx, b.env.Resources.Bucket, res.ManifestKey)
	require.NoError(t, err)
	require.Equal(t, res.ExpiresAt.UTC(), decode[jobkinds.ExportManifest](t, raw).ExpiresAt.UTC(), "the manifest says it too")
}

// Issue 32 item 1: files dropped under imports/<tenant>/ (and their error
// reports, and the import's report parts) were kept forever: no purge
// phase and no lifecycle rule reached them. The purge applies the tenant's
// eventsDays to them (a file is a copy of the events it published): every
// version written before the events cutoff is deleted by id, and the
// output of the imports that finished before it; a file written since and
// another tenant's stay.
func TestRetentionExpiresImportFilesByEventsDays(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	lines := envLine("imp-kept-1", "acme", "inquiry.created") + "\n" + envLine("imp-bad", "acme", "Inquiry Created") + "\n"
	const old, other, fresh = "imports/acme/old.ndjson", "imports/globex/old.ndjson", "imports/acme/new.ndjson"
	b.putFile(t, old, []byte(lines))
	b.putFile(t, other, []byte(lines))
	imp := b.run(t, jobs.StartParams{Kind: jobkinds.KindFileImport, TenantID: "acme", Args: json.RawMessage(`{"key":"` + old + `"}`)})
	require.Equal(t, int64(1), importResult(t, imp).Rejected)
	require.NotEmpty(t, b.versionsUnder(t, jobs.ObjectPrefix+imp.ID+"/"), "the import's report parts")
	written := func(key string) time.Time {
		t.Helper()
		out, err := b.env.S3.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(b.env.Resources.Bucket), Prefix: aws.String(key)})
		require.NoError(t, err)
		require.NotEmpty(t, out.Versions)
		return aws.ToTime(out.Versions[0].LastModified)
	}
	// S3 dates a version to the second: the fresh file is written later.
	for !written(old).Before(time.Now().Add(-time.Second).Truncate(time.Second)) {
		time.Sleep(200 * time.Millisecond)
	}
	b.putFile(t, fresh, []byte(lines))
	require.True(t, written(old).Before(written(fresh)))

	// The events cutoff (7 days) falls between the two files.
	b.clock.Set(written(fresh).Add(7 * retention.Day).Add(-time.Millisecond))
	svc, err := retention.New(retention.Config{MaxEventDays: 14}, retention.Deps{
		Store: &dynamo.Retention{Client: b.env.DynamoDB, Table: b.env.Resources.JobsTable}, Jobs: b.engine, Now: b.clock.Now})
	require.NoError(t, err)
	v, err := svc.Set(ctx, retention.SetParams{TenantID: "acme", EventsDays: 7, Actor: "test"})
	require.NoError(t, err)
	require.NotNil(t, v.Purge)
	job := b.finish(t, v.Purge.ID)
	require.Equal(t, jobs.StatusCompleted, job.Status, job.Error)
	res := decode[jobkinds.RetentionResult](t, job.Result)
	require.Equal(t, 1, res.Imports, "the import's output")
	require.Positive(t, res.ImportObjects)

	require.Empty(t, b.versionsUnder(t, old), "the file and its report, every version")
	require.Empty(t, b.versionsUnder(t, jobs.ObjectPrefix+imp.ID+"/"), "the import's report parts")
	require.Len(t, b.versionsUnder(t, fresh), 1, "written after the cutoff: kept")
	require.Len(t, b.versionsUnder(t, other), 1, "another tenant's: kept")
}
