package jobkinds_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/s3blob"
	"github.com/siteswarm/eventplatform/internal/aws/sqsqueue"
	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/outboxsweep"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/dlqarchiverfn"
	"github.com/siteswarm/eventplatform/internal/wire/httpconsumerfn"
	"github.com/siteswarm/eventplatform/internal/wire/wiretest"
)

// The erasure against every writer of a copy of the subject's data
// (docs/architecture.md §5, guarantee 12; issue 32 "Done means"): after an
// import, during an export, during a stranded send's last attempt and
// during a dead letter, a completed erasure leaves no copy in any table
// item, object version or error report (Copies, the auditor's search).

// step runs one step of a job as its worker does on a wake, the clock
// first moved to the job's due time.
func (b *bundle) step(t *testing.T, id string) jobs.Job {
	t.Helper()
	ctx := context.Background()
	j, err := b.engine.Get(ctx, id)
	require.NoError(t, err)
	if j.Status.Terminal() {
		return j
	}
	if j.DueAt.After(b.clock.Now()) {
		b.clock.Set(j.DueAt)
	}
	require.NoError(t, b.engine.RunWake(ctx, jobs.Wake{TenantID: j.TenantID, IdempotencyKey: j.IdempotencyKey,
		Payload: jobs.WakePayload{Kind: j.Kind, JobID: j.ID, Generation: j.Generation}}))
	j, err = b.engine.Get(ctx, id)
	require.NoError(t, err)
	return j
}

// erasurePhase is where an erasure's checkpoint stands.
type erasurePhase struct {
	Phase     string    `json:"phase"`
	Waiting   []string  `json:"waiting"`
	WaitUntil time.Time `json:"waitUntil"`
}

func phaseOf(t *testing.T, j jobs.Job) erasurePhase {
	t.Helper()
	var p erasurePhase
	if len(j.Checkpoint) > 0 {
		require.NoError(t, json.Unmarshal(j.Checkpoint, &p))
	}
	return p
}

// eraseUntil starts an erasure of subject and runs it, step by step, until
// its checkpoint satisfies at (or it ends): only it runs meanwhile.
func (b *bundle) eraseUntil(t *testing.T, tenant, subject string, at func(erasurePhase) bool) jobs.Job {
	t.Helper()
	j, _, err := b.engine.Start(context.Background(), jobs.StartParams{Kind: jobkinds.KindErasure, TenantID: tenant,
		Args: json.RawMessage(fmt.Sprintf(`{"subject":%q}`, subject))})
	require.NoError(t, err)
	for range 40 {
		if j.Status.Terminal() || at(phaseOf(t, j)) {
			return j
		}
		j = b.step(t, j.ID)
	}
	t.Fatalf("erasure %s did not get there: %+v", j.ID, phaseOf(t, j))
	return j
}

// inWindow: the erasure marked the subject's events and waits out the
// writers that may have read one before.
func inWindow(p erasurePhase) bool { return p.Phase == "inflight" }

// Issue 32 item 1: a file under imports/<tenant>/ holding the subject's
// records (a CRM dump with their e-mail), its error report and the
// import's report parts were never reached by the erasure. They are
// rewritten without the subject's records: a record of the subject becomes
// a blank line (the report's line numbers keep their meaning), its report
// lines go, another subject's record and report line stay, every earlier
// version is deleted, and the version the erasure wrote imports nothing
// when its S3 notification starts an import.
func TestErasureAfterAFileImportKeepsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	_, mine := contact(t, "gdpr", "crm_1", "user-42", 10)
	_, kept := contact(t, "gdpr", "crm_2", "kept-user-7", 10)
	kept = []byte(strings.Replace(string(kept), erasedEmail, "kept-user-7@example.test", 1))
	// Refused by ingest (its type), so reported: its id holds the e-mail.
	_, refused := contact(t, "gdpr", "signup-"+erasedEmail, "user-42", 10)
	refused = []byte(strings.Replace(string(refused), `"inquiry.created"`, `"Inquiry Created"`, 1))
	_, other := contact(t, "gdpr", "crm_9", "kept-user-9", 10)
	other = []byte(strings.Replace(strings.Replace(string(other), `"inquiry.created"`, `"Inquiry Created"`, 1), erasedEmail, "kept-user-9@example.test", 1))
	lines := []string{string(mine), string(kept), string(refused), `{not json "subject":"user-42","email":"` + erasedEmail + `"`, string(other)}
	const key = "imports/gdpr/crm-dump.ndjson"
	b.putFile(t, key, []byte(strings.Join(lines, "\n")+"\n"))
	imp := b.run(t, jobs.StartParams{Kind: jobkinds.KindFileImport, TenantID: "gdpr", Args: json.RawMessage(`{"key":"` + key + `"}`)})
	res := importResult(t, imp)
	require.Equal(t, int64(2), res.Accepted)
	require.Equal(t, int64(3), res.Rejected)
	for _, where := range []string{key + "?", key + jobkinds.ErrorReportSuffix + "?", "/jobs/" + imp.ID + "/"} {
		require.True(t, strings.Contains(strings.Join(b.env.Copies(t, erasedEmail), " "), where), "before the erasure %s holds the subject", where)
	}

	j := b.run(t, jobs.StartParams{Kind: jobkinds.KindErasure, TenantID: "gdpr", Args: json.RawMessage(`{"subject":"user-42"}`)})
	require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)
	require.Empty(t, b.env.Copies(t, erasedEmail), "every copy, every version: file, report, report parts, events")
	file := strings.Split(string(b.getFile(t, key)), "\n")
	require.Equal(t, []string{"", string(kept), "", "", string(other), ""}, file, "the subject's lines are blank, the others as they were")
	report := reportLines(t, b.getFile(t, key+jobkinds.ErrorReportSuffix))
	require.Len(t, report, 1, "the other subject's refusal stays")
	require.Equal(t, int64(5), report[0].Line, "at its line")
	require.Len(t, b.versionsUnder(t, key+jobkinds.ErrorReportSuffix), 1, "earlier versions deleted")
	files := b.versionsUnder(t, key)
	require.Len(t, files, 2, "the file's and its report's only version: %v", files)
	res2 := decode[jobkinds.ErasureResult](t, j.Result)
	require.Positive(t, res2.Stores[jobkinds.StoreImports])

	// The rewrite's notification starts an import of the new version: it
	// imports nothing (its records came from the version before).
	head, err := b.env.S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.env.Resources.Bucket), Key: aws.String(key)})
	require.NoError(t, err)
	again := b.run(t, jobs.StartParams{Kind: jobkinds.KindFileImport, TenantID: "gdpr",
		Args: json.RawMessage(fmt.Sprintf(`{"key":%q,"versionId":%q}`, key, aws.ToString(head.VersionId)))})
	r := importResult(t, again)
	require.Equal(t, j.ID, r.RewrittenBy)
	require.Zero(t, r.Read)
}

// Issue 32 item 2: an export that started before the erasure and finished
// after it listed a part the erasure never rewrote (it rewrote only
// completed exports). The export's first part is written before the
// erasure; the erasure reaches its exports phase while the export runs
// and waits it out, then rewrites it.
func TestErasureDuringAnExportKeepsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	b.publish(t, "gdpr", "evt_e0", "kept-user-7", 10)
	for i := range 3 {
		b.publishContact(t, "gdpr", fmt.Sprintf("evt_e%d", i+1), "user-42", 10)
	}
	exp, _, err := b.engine.Start(ctx, jobs.StartParams{Kind: jobkinds.KindExport, TenantID: "gdpr", Args: json.RawMessage(`{"pageSize":1}`)})
	require.NoError(t, err)
	exp = b.step(t, exp.ID)
	require.False(t, exp.Status.Terminal())
	require.NotEmpty(t, b.env.Copies(t, erasedEmail), "the export's first part holds the subject")

	j := b.eraseUntil(t, "gdpr", "user-42", func(p erasurePhase) bool { return p.Phase == "exports" && len(p.Waiting) > 0 })
	require.False(t, j.Status.Terminal(), "the erasure waits for the running export: %s", j.Status)
	require.Equal(t, []string{exp.ID}, phaseOf(t, j).Waiting)
	for range 20 {
		if exp = b.step(t, exp.ID); exp.Status.Terminal() {
			break
		}
	}
	require.Equal(t, jobs.StatusCompleted, exp.Status, exp.Error)
	j = b.finish(t, j.ID)
	require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)
	require.Empty(t, b.env.Copies(t, erasedEmail), "every copy, every version")
	m := decode[jobkinds.ExportManifest](t, b.getFile(t, decode[jobkinds.ExportResult](t, exp.Result).ManifestKey))
	require.Equal(t, 1, m.Events, "the other subject's event")
	require.Len(t, m.Erasures, 1)
}

// Issue 32 item 3: a failed or cancelled export's committed parts were
// never rewritten. The erasure rewrites every export's output, whatever
// its status (here cancelled after its first part).
func TestErasureRewritesACancelledExport(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	b.publishContact(t, "gdpr", "evt_c1", "user-42", 10)
	b.publishContact(t, "gdpr", "evt_c2", "user-42", 10)
	exp, _, err := b.engine.Start(ctx, jobs.StartParams{Kind: jobkinds.KindExport, TenantID: "gdpr", Args: json.RawMessage(`{"pageSize":1}`)})
	require.NoError(t, err)
	b.step(t, exp.ID)
	exp, err = b.engine.Cancel(ctx, exp.ID)
	require.NoError(t, err)
	require.NotEmpty(t, b.env.Copies(t, erasedEmail))

	j := b.run(t, jobs.StartParams{Kind: jobkinds.KindErasure, TenantID: "gdpr", Args: json.RawMessage(`{"subject":"user-42"}`)})
	require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)
	require.Empty(t, b.env.Copies(t, erasedEmail), "every copy, every version")
	require.Positive(t, decode[jobkinds.ErasureResult](t, j.Result).Stores[jobkinds.StoreExports])
}

// strandLastAttempt leaves an event's notifications row as four failed
// sends leave it: failed, due, one attempt left.
func (b *bundle) strandLastAttempt(t *testing.T, ev envelope.Event) {
	t.Helper()
	_, err := b.env.DynamoDB.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(b.env.Resources.EventsTable),
		Key: map[string]ddbtypes.AttributeValue{table.AttrPK: &ddbtypes.AttributeValueMemberS{Value: dynamo.EventPK(eventKey(ev))},
			table.AttrSK: &ddbtypes.AttributeValueMemberS{Value: dynamo.DispatchSK(topology.Notifications)}},
		UpdateExpression:         aws.String("SET #s = :failed, attempts = :a, maxAttempts = :m, nextRetryAt = :due, leaseOwner = :none, leaseUntil = :zero, lastError = :e, duePk = :dp"),
		ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":failed": &ddbtypes.AttributeValueMemberS{Value: string(outbox.StatusFailed)}, ":a": &ddbtypes.AttributeValueMemberN{Value: "4"},
			":m": &ddbtypes.AttributeValueMemberN{Value: "5"}, ":due": &ddbtypes.AttributeValueMemberN{Value: fmt.Sprint(b.clock.Now().Add(-time.Minute).UnixMilli())},
			":none": &ddbtypes.AttributeValueMemberS{Value: ""}, ":zero": &ddbtypes.AttributeValueMemberN{Value: "0"},
			":e":  &ddbtypes.AttributeValueMemberS{Value: "queue unavailable"},
			":dp": &ddbtypes.AttributeValueMemberS{Value: table.DuePartition(eventKey(ev), topology.Notifications)},
		},
	})
	require.NoError(t, err)
}

// Issue 32 item 4, end to end: the sweeper claims a stranded row on its
// last attempt and reads its ledger item; the send fails; the sweeper
// reads the claim-checked payload to copy it under the incident, and the
// erasure marks the event (and passes the incident) right before the copy
// lands; the abandon is refused (no incident), and the copy is deleted by
// the erasure after its writers' window. Nothing is left.
func TestErasureDuringAStrandedSendsLastAttemptKeepsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	ev := b.publishContact(t, "gdpr", "evt_stranded", "user-42", 4*claimCheckBytes)
	b.strandLastAttempt(t, ev)
	b.env.Faults.Add(awslocal.Fault{Service: "SQS", Operation: "SendMessage", Times: 1})
	var erasure jobs.Job
	hook := incidentCopyHook(func() { erasure = b.eraseUntil(t, "gdpr", "user-42", inWindow) })
	s, err := outboxsweep.New(outboxsweep.Config{}, outboxsweep.Deps{
		Rows: b.env.Events(), Abandoner: b.env.Recovery(), Incidents: b.env.Incidents(),
		Sender: &sqsqueue.Sender{Client: b.env.SQS, URLs: b.env.Resources.QueueURLs(), FIFO: b.env.Topology.FIFOTopics()},
		Bodies: &incident.Bodies{Store: &s3blob.S3{Client: s3.New(b.env.S3.Options(), func(o *s3.Options) { o.APIOptions = append(o.APIOptions, hook.APIOption) })},
			Bucket: b.env.Resources.Bucket},
		Now: b.clock.Now,
	})
	require.NoError(t, err)
	rep, err := s.Run(ctx, time.Now().Add(time.Minute))
	require.NoError(t, err)
	require.True(t, hook.Ran())
	require.Equal(t, 1, rep.Erased, "%+v", rep)
	require.Zero(t, rep.Abandoned)
	_, err = b.env.Incidents().Get(ctx, incident.ID(eventKey(ev), topology.Notifications))
	require.ErrorIs(t, err, incident.ErrNotFound)
	require.NotEmpty(t, b.versionsUnder(t, incident.ObjectPrefix("gdpr", incident.ID(eventKey(ev), topology.Notifications))),
		"the sweeper kept a copy of the payload for the incident before the refused write")

	j := b.finish(t, erasure.ID)
	require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)
	require.Empty(t, b.env.Copies(t, erasedEmail), "every copy, every version")
}

// incidentCopyHook runs do when a writer that read the event's payload
// is about to store its copy under the incident's prefix (before its
// incident write): the copy lands after the erasure passed the incident.
func incidentCopyHook(do func()) *awslocaltest.Hook {
	return &awslocaltest.Hook{Service: "S3", Operation: "PutObject", Before: true, Match: func(in any) bool {
		p, ok := in.(*s3.PutObjectInput)
		return ok && strings.HasPrefix(aws.ToString(p.Key), "incidents/")
	}, Do: do}
}

// Issue 32 item 5, end to end: a real consumer dead-letters the event, the
// DLQ archiver reads the row (no marker yet) and the claim-checked payload,
// the erasure marks the event before the archiver's copy of it lands under
// the incident, and the archiver's incident write is refused; the erasure
// deletes the copy after its writers' window.
func TestErasureDuringADeadLetterKeepsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	ev := b.publishContact(t, "gdpr", "evt_dead", "user-42", 4*claimCheckBytes)
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

	// The archiver read the row (no marker yet) and the claim-checked
	// payload; the erasure marks the event (and passes the incident)
	// right before the archiver's copy lands under the incident.
	var erasure jobs.Job
	hook := incidentCopyHook(func() { erasure = b.eraseUntil(t, "gdpr", "user-42", inWindow) })
	cfg, err := dlqarchiverfn.Load(envconf.FromMap(wiretest.Environment(b.env, nil)), b.env.Topology)
	require.NoError(t, err)
	arch, err := dlqarchiverfn.New(cfg, dlqarchiverfn.Clients{DynamoDB: b.env.DynamoDB, SNS: b.env.SNS,
		S3: s3.New(b.env.S3.Options(), func(o *s3.Options) { o.APIOptions = append(o.APIOptions, hook.APIOption) })},
		wire.Runtime{Metrics: metric.Discard()})
	require.NoError(t, err)
	resp, err = arch.Handle(ctx, lambdalocal.SQSEvent(q.DLQARN, dead))
	require.NoError(t, err)
	require.True(t, hook.Ran())
	require.Empty(t, resp.BatchItemFailures, "acknowledged")
	_, err = b.env.Incidents().Get(ctx, incident.ID(eventKey(ev), topology.Notifications))
	require.ErrorIs(t, err, incident.ErrNotFound, "no incident of the erased event")
	require.NotEmpty(t, b.versionsUnder(t, incident.ObjectPrefix("gdpr", incident.ID(eventKey(ev), topology.Notifications))),
		"the archiver kept a copy of the payload for the incident before the refused write")

	j := b.finish(t, erasure.ID)
	require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)
	require.Empty(t, b.env.Copies(t, erasedEmail), "every copy, every version")
}
