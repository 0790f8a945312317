package jobkinds_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire/jobsworkerfn"
)

// envLine is an internal envelope as a line of an import file.
func envLine(id, tenant, typ string) string {
	m := map[string]any{"schemaVersion": 1, "type": typ, "source": "storefront",
		"timestamp": "2026-12-01T10:00:00Z", "payload": map[string]any{"n": id}}
	if id != "" {
		m["id"] = id
	}
	if tenant != "" {
		m["tenantId"] = tenant
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// stripeEvent is a Stripe event object as GET /v1/events returns it.
func stripeEvent(id, tenant string) string {
	md := map[string]any{}
	if tenant != "" {
		md["tenant_id"] = tenant
	}
	b, _ := json.Marshal(map[string]any{"id": id, "object": "event", "api_version": "2024-06-20", "created": 1764676800,
		"type": "invoice.paid", "livemode": false, "pending_webhooks": 0,
		"data": map[string]any{"object": map[string]any{"id": "in_" + id, "object": "invoice", "customer": "cus_1", "metadata": md}}})
	return string(b)
}

func (b *bundle) putFile(t *testing.T, key string, body []byte) string {
	t.Helper()
	out, err := b.env.S3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(b.env.Resources.Bucket), Key: aws.String(key), Body: bytes.NewReader(body)})
	require.NoError(t, err)
	return aws.ToString(out.VersionId)
}

func (b *bundle) getFile(t *testing.T, key string) []byte {
	t.Helper()
	out, err := b.blobs.Get(context.Background(), b.env.Resources.Bucket, key)
	require.NoError(t, err)
	return out
}

func importResult(t *testing.T, j jobs.Job) jobkinds.ImportResult {
	t.Helper()
	require.Equal(t, jobs.StatusCompleted, j.Status, "job %+v", j.Error)
	var r jobkinds.ImportResult
	require.NoError(t, json.Unmarshal(j.Result, &r))
	return r
}

func reportLines(t *testing.T, body []byte) []jobkinds.ImportError {
	t.Helper()
	var out []jobkinds.ImportError
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		var e jobkinds.ImportError
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e), sc.Text())
		out = append(out, e)
	}
	return out
}

func TestFileImportPublishesEveryRecordAndReportsTheBadOnesByLine(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	lines := []string{
		envLine("imp-ok-1", "acme", "inquiry.created"), // 1 accepted
		envLine("imp-ok-2", "", "inquiry.created"),     // 2 accepted: the file's tenant filled in
		"", // 3 blank: not a record
		envLine("imp-other", "globex", "inquiry.created"),  // 4 tenant_mismatch
		envLine("imp-bad-type", "acme", "Inquiry Created"), // 5 invalid_type (ingest's code)
		"{not json", // 6 invalid_record
		envLine("imp-unrouted", "acme", "inquiry.updated"), // 7 unrouted
		stripeEvent("evt_imp1", ""),                        // 8 accepted: attributed to the file's tenant
		stripeEvent("evt_imp2", "globex"),                  // 9 tenant_mismatch (metadata names globex)
		`{"object":"list","data":[` + stripeEvent("evt_imp3", "acme") + "," + stripeEvent("evt_imp4", "") + `],"has_more":false}`, // 10: two accepted
		envLine("", "acme", "inquiry.created"),                                                                // 11 accepted under a derived id
		envLine("imp-ok-1", "acme", "inquiry.created"),                                                        // 12 duplicate of line 1
		strings.Replace(envLine("imp-ok-1", "acme", "inquiry.created"), `"n":"imp-ok-1"`, `"n":"changed"`, 1), // 13 idempotency_conflict
	}
	key := "imports/acme/batch-1.ndjson"
	b.putFile(t, key, []byte(strings.Join(lines, "\r\n"))) // CRLF, and no final line end

	j := b.run(t, jobs.StartParams{Kind: jobkinds.KindFileImport, TenantID: "acme", Args: json.RawMessage(fmt.Sprintf(`{"key":%q}`, key))})
	r := importResult(t, j)
	require.Equal(t, int64(13), r.Read, "12 non-blank lines, one of them a page of two events")
	require.Equal(t, int64(6), r.Accepted)
	require.Equal(t, int64(1), r.Duplicates)
	require.Equal(t, int64(6), r.Rejected)
	require.Equal(t, r.Read, r.Accepted+r.Duplicates+r.Rejected)
	require.Equal(t, key+jobkinds.ErrorReportSuffix, r.ReportKey)
	require.NotNil(t, j.Progress)
	require.Equal(t, j.Progress.Total, j.Progress.Done)
	require.Equal(t, r.Read, j.Progress.Counts["read"])

	got := map[int64]string{}
	for _, e := range reportLines(t, b.getFile(t, r.ReportKey)) {
		require.NotEmpty(t, e.Message, "line %d", e.Line)
		got[e.Line] = e.Code
	}
	require.Equal(t, map[int64]string{4: "tenant_mismatch", 5: "invalid_type", 6: "invalid_record", 7: "unrouted", 9: "tenant_mismatch", 13: "idempotency_conflict"}, got)

	// What was accepted is in the ledger under the file's tenant, and
	// nothing of another tenant's is.
	events := b.env.Events()
	for _, key := range []string{"acme/imp-ok-1", "acme/imp-ok-2", "evt_imp1", "evt_imp3", "evt_imp4"} {
		rec, err := events.Record(ctx, key)
		require.NoError(t, err, key)
		require.Equal(t, "acme", rec.Event.TenantID, key)
	}
	for _, key := range []string{"globex/imp-other", "acme/imp-other", "evt_imp2", "acme/imp-unrouted"} {
		_, err := events.Record(ctx, key)
		require.ErrorIs(t, err, ledger.ErrNotFound, key)
	}
}

func TestFileImportRerunPublishesNothingTwiceAndDerivesTheSameIDs(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	key := "imports/acme/rerun.ndjson"
	b.putFile(t, key, []byte(strings.Join([]string{
		envLine("rr-1", "acme", "inquiry.created"), envLine("", "acme", "inquiry.created"), stripeEvent("evt_rr", "acme"),
	}, "\n")+"\n"))
	args := json.RawMessage(fmt.Sprintf(`{"key":%q}`, key))
	first := importResult(t, b.run(t, jobs.StartParams{Kind: jobkinds.KindFileImport, TenantID: "acme", Args: args}))
	require.Equal(t, jobkinds.ImportResult{Key: key, Bytes: first.Bytes, VersionID: first.VersionID, Read: 3, Accepted: 3}, first)
	sent := b.env.Calls.Count("SQS", "SendMessage")

	again := importResult(t, b.run(t, jobs.StartParams{Kind: jobkinds.KindFileImport, TenantID: "acme", Args: args}))
	require.Equal(t, int64(3), again.Read)
	require.Equal(t, int64(0), again.Accepted)
	require.Equal(t, int64(3), again.Duplicates, "the id-less record got the same derived id")
	require.Equal(t, sent, b.env.Calls.Count("SQS", "SendMessage"), "a re-run sends nothing to any topic")
}

// lines of n envelopes, one subject per 10 so lanes keep several in order.
func manyLines(prefix string, n int) []byte {
	var buf bytes.Buffer
	for i := range n {
		m := map[string]any{"schemaVersion": 1, "id": fmt.Sprintf("%s-%05d", prefix, i), "type": "inquiry.created", "source": "storefront",
			"timestamp": "2026-12-01T10:00:00Z", "subject": fmt.Sprintf("s-%d", i/10), "payload": map[string]any{"i": i}}
		bb, _ := json.Marshal(m)
		buf.Write(bb)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

func gz(t *testing.T, parts ...[]byte) []byte {
	t.Helper()
	var out bytes.Buffer
	for _, p := range parts { // each part its own gzip member
		zw := gzip.NewWriter(&out)
		_, err := zw.Write(p)
		require.NoError(t, err)
		require.NoError(t, zw.Close())
	}
	return out.Bytes()
}

// A file read over many steps (a checkpoint after every 7 records), in
// plain NDJSON, one gzip member and several, resumes each step from its
// byte offset: every record read once, none published twice.
func TestFileImportResumesEachStepFromItsOffset(t *testing.T) {
	t.Parallel()
	b := setup(t, map[string]string{jobsworkerfn.EnvImportStepRecords: "7", jobsworkerfn.EnvImportConcurrency: "4"})
	cases := map[string][]byte{
		"plain.ndjson":         manyLines("pl", 40),
		"one-member.ndjson.gz": gz(t, manyLines("g1", 40)),
		"members.gz":           gz(t, manyLines("gm", 13), manyLines("gm2", 9), []byte{}, manyLines("gm3", 18)),
	}
	for name, body := range cases {
		key := "imports/acme/" + name
		b.putFile(t, key, body)
		j := b.run(t, jobs.StartParams{Kind: jobkinds.KindFileImport, TenantID: "acme", Args: json.RawMessage(fmt.Sprintf(`{"key":%q}`, key))})
		r := importResult(t, j)
		require.Equal(t, int64(40), r.Read, name)
		require.Equal(t, int64(40), r.Accepted, name)
		require.Equal(t, strings.HasSuffix(name, "gz"), r.Gzip, name)
		require.GreaterOrEqual(t, j.Steps, 7, "%s: 40 records at 7 a step, then the report step", name)
	}
}

// A step that fails half-way (ingest unreachable after some of its calls
// stored their records) is retried from its checkpoint: none is stored or
// sent twice, and the records the failed attempt stored count as accepted,
// not as duplicates (the failed attempt commits which they were), while a
// record the file really repeats still counts as a duplicate. Before, a
// fresh file showed the failed attempt's records as duplicates (1,064 of
// 100,000 in a loaded throughput run whose steps ran out of time).
func TestFileImportCrashMidStepPublishesNothingTwice(t *testing.T) {
	t.Parallel()
	b := setup(t, map[string]string{jobsworkerfn.EnvImportStepRecords: "10", jobsworkerfn.EnvImportConcurrency: "1", jobsworkerfn.EnvImportInvokeRecords: "3"})
	key := "imports/acme/crash.ndjson"
	lines := strings.SplitAfter(string(manyLines("cr", 30)), "\n")
	lines[13] = lines[11] // line 14 repeats line 12: a real duplicate, in the call that fails
	b.putFile(t, key, []byte(strings.Join(lines, "")))
	j, _, err := b.engine.Start(context.Background(), jobs.StartParams{Kind: jobkinds.KindFileImport, TenantID: "acme", Args: json.RawMessage(fmt.Sprintf(`{"key":%q}`, key))})
	require.NoError(t, err)
	// One step (ten records, four calls of up to three) commits; in the
	// second, the first call (lines 11-13) stores its records and the
	// second (lines 14-16) fails.
	w := jobs.Wake{TenantID: j.TenantID, IdempotencyKey: j.IdempotencyKey, Payload: jobs.WakePayload{Kind: j.Kind, JobID: j.ID, Generation: j.Generation}}
	require.NoError(t, b.engine.RunWake(context.Background(), w))
	j, err = b.engine.Get(context.Background(), j.ID)
	require.NoError(t, err)
	require.Equal(t, 1, j.Steps)
	require.Equal(t, int64(10), j.Progress.Counts["read"])
	require.Equal(t, 4, b.env.Calls.Count("Lambda", "Invoke"), "ten records in calls of up to three")
	calls := 0
	b.env.Faults.Add(awslocal.Fault{Service: "Lambda", Operation: "Invoke", Times: 1, Match: func(any) bool { calls++; return calls == 2 }})
	r := importResult(t, b.finish(t, j.ID))
	require.Equal(t, int64(30), r.Read)
	require.Equal(t, int64(1), r.Duplicates, "line 14 only: the failed attempt's stored records are counted accepted on the retry")
	require.Equal(t, int64(29), r.Accepted)
	require.Equal(t, 1, b.env.Faults.Injected("Invoke"))
	for _, topic := range []string{topology.Notifications, topology.CRM} {
		ids := map[string]int{}
		for _, m := range b.env.ReceiveAll(context.Background(), b.env.Resources.Queues[topic].URL, 100, 300*time.Millisecond) {
			ids[aws.ToString(m.MessageAttributes[outbox.AttrEventID].StringValue)]++
		}
		require.Len(t, ids, 29, "each event sent to %s", topic)
		for id, n := range ids {
			require.Equal(t, 1, n, "%s sent to %s once", id, topic)
		}
	}
}

// A line longer than the limit is reported and skipped without being held,
// and the file is read in bounded ranged GETs, never whole.
func TestFileImportReadsInBoundedRangesAndSkipsAnOverlongLine(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	key := "imports/acme/big.ndjson"
	var body bytes.Buffer
	body.WriteString(envLine("big-1", "acme", "inquiry.created") + "\n")
	body.WriteString(`{"x":"` + strings.Repeat("a", jobkinds.MaxImportLineBytes+10) + `"}` + "\n")
	body.WriteString(envLine("big-2", "acme", "inquiry.created") + "\n")
	b.putFile(t, key, body.Bytes())
	var ranges []string
	b.env.Faults.Add(awslocal.Fault{Service: "S3", Operation: "GetObject", Probability: 0, Match: func(in any) bool {
		if g, ok := in.(*s3.GetObjectInput); ok && aws.ToString(g.Key) == key {
			ranges = append(ranges, aws.ToString(g.Range))
		}
		return false
	}})
	r := importResult(t, b.run(t, jobs.StartParams{Kind: jobkinds.KindFileImport, TenantID: "acme", Args: json.RawMessage(fmt.Sprintf(`{"key":%q}`, key))}))
	require.Equal(t, jobkinds.ImportResult{Key: key, VersionID: r.VersionID, Bytes: int64(body.Len()), Read: 3, Accepted: 2, Rejected: 1, ReportKey: key + jobkinds.ErrorReportSuffix}, r)
	rep := reportLines(t, b.getFile(t, r.ReportKey))
	require.Len(t, rep, 1)
	require.Equal(t, jobkinds.ImportError{Line: 2, Code: jobkinds.CodeLineTooLong, Message: rep[0].Message}, rep[0])
	require.GreaterOrEqual(t, len(ranges), 3, "the sniff, then 8 MiB ranges: %v", ranges)
	for _, rg := range ranges {
		var from, to int64
		_, err := fmt.Sscanf(rg, "bytes=%d-%d", &from, &to)
		require.NoError(t, err, "every read is ranged: %q", rg)
		require.LessOrEqual(t, to-from+1, int64(8<<20))
	}
}

func TestFileImportStartRefusesAnotherTenantsPath(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for _, tc := range []struct{ tenant, args string }{
		{"acme", `{"key":"imports/globex/a.ndjson"}`},
		{"acme", `{"key":"exports/acme/a.ndjson"}`},
		{"acme", `{"key":"imports/acme/"}`},
		{"acme", `{"key":"imports/acme/a.ndjson.errors.ndjson"}`},
		{"acme", `{"key":"imports/acme/a.ndjson","bucket":"other"}`},
		{"acme", `{}`},
	} {
		_, _, err := b.engine.Start(context.Background(), jobs.StartParams{Kind: jobkinds.KindFileImport, TenantID: tc.tenant, Args: json.RawMessage(tc.args)})
		var re *jobs.RequestError
		require.ErrorAs(t, err, &re, tc.args)
		require.Equal(t, jobs.CodeInvalidArgs, re.Code, tc.args)
	}
}

func TestFileImportOfAMissingFileFailsWithItsCode(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	j := b.run(t, jobs.StartParams{Kind: jobkinds.KindFileImport, TenantID: "acme", Args: json.RawMessage(`{"key":"imports/acme/none.ndjson"}`)})
	require.Equal(t, jobs.StatusFailed, j.Status)
	require.Equal(t, jobkinds.CodeFileNotFound, j.Error.Code)
	require.NotEmpty(t, j.IncidentID, "a failed job opens an incident")
}

func TestFileImportOfACorruptGzipPublishesWhatPrecedesAndFails(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	key := "imports/acme/corrupt.gz"
	good := gz(t, manyLines("cz", 5))
	b.putFile(t, key, append(good, []byte("garbage after the member")...))
	j := b.run(t, jobs.StartParams{Kind: jobkinds.KindFileImport, TenantID: "acme", Args: json.RawMessage(fmt.Sprintf(`{"key":%q}`, key))})
	require.Equal(t, jobs.StatusFailed, j.Status)
	require.Equal(t, jobkinds.CodeInvalidGzip, j.Error.Code)
}

// A customer's Stripe events keep the file's order: their FIFO group is
// the customer, so the import publishes them in one lane (the customer),
// not spread over lanes by the object each is about (48 invoices of
// cus_1 arrived evt_ord000, 013, 026, 039, 004, … before).
func TestFileImportKeepsACustomersStripeEventsInFileOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	var lines, want []string
	for i := range 48 {
		id := fmt.Sprintf("evt_ord%03d", i)
		lines, want = append(lines, stripeEvent(id, "")), append(want, id)
	}
	key := "imports/acme/ordered.ndjson"
	b.putFile(t, key, []byte(strings.Join(lines, "\n")+"\n"))
	r := importResult(t, b.run(t, jobs.StartParams{Kind: jobkinds.KindFileImport, TenantID: "acme", Args: json.RawMessage(fmt.Sprintf(`{"key":%q}`, key))}))
	require.Equal(t, int64(48), r.Accepted)

	var got []string
	for _, m := range b.env.ReceiveAndDelete(ctx, b.env.Queue(topology.Billing).URL, 0, time.Second) {
		require.Equal(t, "acme/cus_1", m.Attributes["MessageGroupId"], "the customer's group")
		got = append(got, aws.ToString(m.MessageAttributes[outbox.AttrEventID].StringValue))
	}
	require.Equal(t, want, got, "the file's order")
}

// A single-stream gzip file read over many steps: each step after the
// first resumes decoding at the last DEFLATE block boundary before its
// place (the checkpoint's mark), reading the file from there, instead of
// reading and decoding the member from its start again — which made a
// large single-stream file's import quadratic (every step decoded
// everything before it). Every record is read once, the member's checksum
// still verified at its end.
func TestFileImportOfOneGzipMemberResumesWhereEachStepStopped(t *testing.T) {
	t.Parallel()
	b := setup(t, map[string]string{jobsworkerfn.EnvImportStepRecords: "150", jobsworkerfn.EnvImportInvokeRecords: "50"})
	rng := rand.New(rand.NewPCG(3, 5))
	var raw bytes.Buffer
	const n = 1000
	for i := range n {
		// Random text compresses poorly: many DEFLATE blocks in a small file.
		note := make([]byte, 120)
		for k := range note {
			note[k] = "abcdefghijklmnopqrstuvwxyz0123456789"[rng.IntN(36)]
		}
		fmt.Fprintf(&raw, `{"schemaVersion":1,"id":"gz1-%05d","type":"inquiry.created","source":"storefront","timestamp":"2026-12-01T10:00:00Z","subject":"s-%d","payload":{"note":%q}}`+"\n", i, i/10, note)
	}
	key := "imports/acme/single-stream.ndjson.gz"
	body := gz(t, raw.Bytes())
	b.putFile(t, key, body)
	var ranges []string
	b.env.Faults.Add(awslocal.Fault{Service: "S3", Operation: "GetObject", Match: func(in any) bool {
		if g, ok := in.(*s3.GetObjectInput); ok && aws.ToString(g.Key) == key {
			ranges = append(ranges, aws.ToString(g.Range))
		}
		return false
	}})
	j := b.run(t, jobs.StartParams{Kind: jobkinds.KindFileImport, TenantID: "acme", Args: json.RawMessage(fmt.Sprintf(`{"key":%q}`, key))})
	r := importResult(t, j)
	require.True(t, r.Gzip)
	require.Equal(t, int64(n), r.Read)
	require.Equal(t, int64(n), r.Accepted)
	require.Zero(t, r.Duplicates)
	require.GreaterOrEqual(t, j.Steps, 7, "1,000 records at 150 a step")

	fromStart := 0
	var starts []int64
	for _, rg := range ranges {
		var from, to int64
		_, err := fmt.Sscanf(rg, "bytes=%d-%d", &from, &to)
		require.NoError(t, err, rg)
		if to == 1 {
			continue // the gzip sniff
		}
		if from == 0 {
			fromStart++
		}
		starts = append(starts, from)
	}
	require.Equal(t, 1, fromStart, "only the first step reads the member from its start: %v", ranges)
	require.True(t, slices.IsSorted(starts), "each step starts where the last left off: %v", starts)
	require.Less(t, starts[len(starts)-1], int64(len(body)), "the last step starts inside the file, not at its start")
}
