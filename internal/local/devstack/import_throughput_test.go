package devstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/local/devstack/devstacktest"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire/jobsworkerfn"
)

var (
	importRecords     = flag.Int("import-throughput", 0, "drop a file of this many records under imports/ of the local stack and report the import's rate (make import-throughput)")
	importConcurrency = flag.String("import-concurrency", "", "IMPORT_CONCURRENCY of the stack's jobs-worker (default its own)")
	importWarmup      = flag.Int("import-warmup", 5000, "records of an import run first, unmeasured, so the measured one meets warm JITs (0: none)")
	importInvoke      = flag.String("import-invoke-records", "", "IMPORT_INVOKE_RECORDS of the stack's jobs-worker (default its own)")
	importDynamo      = flag.String("import-dynamodb", awslocal.DynamoAuto, "the DynamoDB emulator: local (DynamoDB Local), embedded or auto")
)

// The file import's rate on the local stack (DynamoDB Local when Java is
// there): a file of N audit envelopes (one topic, the archive consumer)
// dropped under imports/bench/, imported by the job the notification
// starts, from the put to the job's completion. Only with
// -import-throughput=N: at 100,000 records it runs for minutes. It also
// reports the AWS calls the functions made per record (by operation), the
// invocations per function and the load average before and after, since
// the machine it runs on is shared.
func TestImportThroughput(t *testing.T) {
	if *importRecords == 0 {
		t.Skip("run with -import-throughput=N (make import-throughput)")
	}
	settings := map[string]string{}
	if *importConcurrency != "" {
		settings[jobsworkerfn.EnvImportConcurrency] = *importConcurrency
	}
	if *importInvoke != "" {
		settings[jobsworkerfn.EnvImportInvokeRecords] = *importInvoke
	}
	calls := awslocal.NewCalls()
	byFunction := &functionCalls{counts: map[string]int{}}
	var (
		mu          sync.Mutex
		invocations = map[string]int{}
		busy        = map[string]time.Duration{}
	)
	st, err := devstack.Start(context.Background(), devstack.Options{
		Addr: "127.0.0.1:0", Prefix: awslocal.NewPrefix(), Log: logging.Discard(), Env: envconf.FromMap(nil), DynamoDB: *importDynamo,
		Settings:   settings,
		APIOptions: []func(*middleware.Stack) error{calls.APIOption, byFunction.apiOption},
		Invoked: func(ctx context.Context, fn string) (context.Context, func(time.Duration)) {
			return context.WithValue(ctx, functionKey{}, fn), func(d time.Duration) {
				mu.Lock()
				invocations[fn]++
				busy[fn] += d
				mu.Unlock()
			}
		},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	// A stack that has just started runs its first minute on cold JITs
	// (DynamoDB Local's above all: about half its later rate), which
	// `make dev` pays once. The warm-up import (its rate is logged too) is
	// followed by a wait for its messages to be archived, so the measured
	// import shares the machine with nothing of it.
	if w := *importWarmup; w > 0 {
		body := importFile("warm", w)
		took, job := runImport(t, st, "imports/bench/warmup.ndjson", body)
		t.Logf("WARM-UP %d records in %s: %.0f records/s (cold stack); %v steps", w, took.Round(time.Second), float64(w)/took.Seconds(), job["steps"])
		archive := st.Resources.Queues[topology.Audit].URL
		require.Eventually(t, func() bool {
			visible, inflight := dlqDepth(t, st, archive)
			return visible == 0 && inflight == 0
		}, 10*time.Minute, time.Second, "the warm-up's messages archived")
	}
	n := *importRecords
	body := importFile("bench", n)
	loadBefore := loadAverage()
	calls.Reset()
	byFunction.reset()
	mu.Lock()
	clear(invocations)
	clear(busy)
	mu.Unlock()
	started := time.Now()
	took, job := runImport(t, st, "imports/bench/records.ndjson", body)
	loadAfter := loadAverage()
	require.Equal(t, "completed", job["status"], job)
	res, _ := json.Marshal(job["result"])
	t.Logf("IMPORT %d records (%d bytes) in %s: %.0f records/s on %s; %v steps; result %s; load average before %s, after %s",
		n, len(body), took.Round(time.Second), float64(n)/took.Seconds(), st.Emulators.DynamoKind, job["steps"], res, loadBefore, loadAfter)
	// The archive consumer catches up after the import (it shares the
	// emulator with it): the calls below are the whole path's, and a
	// sweeper resending a lagging row shows as SQS.SendMessage.
	archive := st.Resources.Queues[topology.Audit].URL
	require.Eventually(t, func() bool {
		visible, inflight := dlqDepth(t, st, archive)
		return visible == 0 && inflight == 0
	}, 30*time.Minute, time.Second, "the import's messages archived")
	all := time.Since(started)
	t.Logf("ARCHIVED every message %s after the import began: %.0f records/s end to end", all.Round(time.Second), float64(n)/all.Seconds())
	snap := calls.Snapshot()
	for _, op := range slices.Sorted(maps.Keys(snap)) {
		if !strings.HasSuffix(op, ".ReceiveMessage") {
			t.Logf("CALLS %-40s %8d  %.3f/record", op, snap[op], float64(snap[op])/float64(n))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(byFunction.counts)) {
		if strings.Contains(k, " DynamoDB.") {
			t.Logf("BY FUNCTION %-56s %8d  %.3f/record", k, byFunction.counts[k], float64(byFunction.counts[k])/float64(n))
		}
	}
	mu.Lock()
	for _, fn := range slices.Sorted(maps.Keys(invocations)) {
		t.Logf("INVOKED %-24s %8d  busy %s", fn, invocations[fn], busy[fn].Round(time.Second))
	}
	mu.Unlock()
	require.Equal(t, float64(n), job["result"].(map[string]any)["accepted"])
}

// functionKey carries the invoked function's name in its context.
type functionKey struct{}

// functionCalls counts SDK calls by the function that made them
// ("ingest DynamoDB.UpdateItem"; "-" outside any invocation).
type functionCalls struct {
	mu     sync.Mutex
	counts map[string]int
}

func (f *functionCalls) apiOption(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("throughput.byFunction",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			fn, _ := ctx.Value(functionKey{}).(string)
			if fn == "" {
				fn = "-"
			}
			f.mu.Lock()
			f.counts[fn+" "+middleware.GetServiceID(ctx)+"."+middleware.GetOperationName(ctx)]++
			f.mu.Unlock()
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}

func (f *functionCalls) reset() {
	f.mu.Lock()
	clear(f.counts)
	f.mu.Unlock()
}

// importFile is n audit envelopes of about 280 bytes, ids prefixed by
// prefix, 500 subjects.
func importFile(prefix string, n int) []byte {
	var body bytes.Buffer
	for i := range n {
		fmt.Fprintf(&body, `{"schemaVersion":1,"id":"imp-%s-%07d","type":"audit.record.imported","source":"platform","timestamp":"2026-12-01T10:00:00Z","subject":"acct-%d","payload":{"i":%d,"note":"an imported audit record of about two hundred bytes, as an export from another system would hold"}}`+"\n", prefix, i, i%500, i)
	}
	return body.Bytes()
}

// runImport drops body under key, finds the job its notification
// started, and follows it (logging when each step commits) until it ends:
// the time from the put to the end, and the job.
func runImport(t *testing.T, st *devstack.Stack, key string, body []byte) (time.Duration, map[string]any) {
	t.Helper()
	start := time.Now()
	_, err := st.Clients.S3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(st.Resources.Bucket), Key: aws.String(key), Body: bytes.NewReader(body)})
	require.NoError(t, err)
	var id string
	require.Eventually(t, func() bool {
		_, list := devstacktest.AdminDo(t, st, http.MethodGet, "/admin/jobs?tenant=bench&kind=file-import", nil)
		items, _ := list["jobs"].([]any)
		for _, it := range items {
			j := it.(map[string]any)
			if args, _ := j["args"].(map[string]any); args["key"] == key {
				id = j["jobId"].(string)
			}
		}
		return id != ""
	}, time.Minute, 100*time.Millisecond)
	var job map[string]any
	lastLog := time.Now()
	var lastSteps any
	require.Eventually(t, func() bool {
		_, job = devstacktest.AdminDo(t, st, http.MethodGet, "/admin/jobs/"+id, nil)
		if job["steps"] != lastSteps {
			// When each step committed: the gaps between steps are the
			// engine's (wake, poll), the rest the import's.
			lastSteps = job["steps"]
			t.Logf("STEP %v committed after %s: %v", job["steps"], time.Since(start).Round(100*time.Millisecond), job["progress"])
		}
		if time.Since(lastLog) > 30*time.Second {
			// Progress while it runs (a 100,000-record run takes minutes).
			lastLog = time.Now()
			t.Logf("after %s: steps %v, progress %v, load %s", time.Since(start).Round(time.Second), job["steps"], job["progress"], loadAverage())
		}
		return job["status"] == "completed" || job["status"] == "failed"
	}, 120*time.Minute, time.Second)
	return time.Since(start), job
}

// loadAverage is the machine's 1, 5 and 15 minute load averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
