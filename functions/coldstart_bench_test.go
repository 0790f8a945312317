package functions_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// buildFlags are `make build`'s, for the host's architecture (the binary
// has to run here to be timed).
var buildFlags = []string{"build", "-trimpath", "-tags", "lambda.norpc", "-ldflags=-s -w"}

// coldStartRuns is how many starts each binary's median init is taken
// over.
const coldStartRuns = 15

// coldStartEnv is a deployed stage's environment, every function's
// variables at once (each reads its own): fake names, because nothing but
// the Runtime API answers here.
func coldStartEnv(fn string) []string {
	queues := `{"billing.events":"https://sqs.eu-west-1.amazonaws.com/123456789012/q-billing","notifications.events":"https://sqs.eu-west-1.amazonaws.com/123456789012/q-notif","crm.sync":"https://sqs.eu-west-1.amazonaws.com/123456789012/q-crm","cache.purge":"https://sqs.eu-west-1.amazonaws.com/123456789012/q-purge","audit.events":"https://sqs.eu-west-1.amazonaws.com/123456789012/q-audit"}`
	arns := strings.NewReplacer("https://sqs.eu-west-1.amazonaws.com/123456789012/", "arn:aws:sqs:eu-west-1:123456789012:").Replace(queues)
	topic := map[string]string{"consumer-http": "billing.events", "consumer-archive": "audit.events", "consumer-purge": "cache.purge"}[fn]
	env := []string{
		"AWS_REGION=eu-west-1", "AWS_ACCESS_KEY_ID=AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY=secret", "AWS_LAMBDA_FUNCTION_NAME=" + fn,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512", "AWS_LAMBDA_LOG_LEVEL=WARN", "HOME=" + os.TempDir(),
		"EVENTS_TABLE=evp-bench-events", "INCIDENTS_TABLE=evp-bench-incidents", "PURGE_TABLE=evp-bench-purge", "JOBS_TABLE=evp-bench-jobs", "ADMIN_TABLE=evp-bench-admin",
		"ARCHIVE_BUCKET=evp-bench-archive", "STAGE_NAME=evp-bench", "TOPIC_QUEUE_URLS=" + queues, "TOPIC_DLQ_URLS=" + queues, "TOPIC_DLQ_ARNS=" + arns,
		"JOBS_QUEUE_URL=https://sqs.eu-west-1.amazonaws.com/123456789012/jobs",
		"INGEST_FUNCTION_ARN=arn:aws:lambda:eu-west-1:123456789012:function:evp-bench-ingest",
		// Secrets by value: a function that cannot serve without its
		// secret reads it at cold start (one GetSecretValue, not timed
		// here; everything else must wait for an invocation).
		"STRIPE_WEBHOOK_SECRET=whsec_bench_secret_1234567890", "SUBSCRIBER_SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		"ADMIN_API_KEY=bench-admin-key-123456", "CLOUDFLARE_API_TOKEN=cf-bench-token", "STRIPE_API_KEY=sk_test_bench",
		`STRIPE_TENANT_MAP={"default":"acme"}`, `PURGE_ZONES={"default":"zone1"}`,
		"ALERT_TOPIC_ARN=arn:aws:sns:eu-west-1:123456789012:alerts", "SUBSCRIBER_URL=https://example.com/hook",
	}
	if topic != "" {
		q := strings.ReplaceAll(strings.ReplaceAll(topic, ".", "-"), "events", "")
		env = append(env, "CONSUMER_TOPIC="+topic,
			"CONSUMER_QUEUE_URL=https://sqs.eu-west-1.amazonaws.com/123456789012/"+q,
			"CONSUMER_DLQ_URL=https://sqs.eu-west-1.amazonaws.com/123456789012/"+q+"-dlq")
	}
	return env
}

// floorSource is the smallest Lambda linking the same AWS clients: what a
// function would weigh and take to start with nothing of ours in it.
func floorSource(svcs []string) string {
	var imports, clients strings.Builder
	for _, s := range svcs {
		fmt.Fprintf(&imports, "\tsvc%s %q\n", s, service+s)
		fmt.Fprintf(&clients, "\t\tsvc%s.NewFromConfig(cfg),\n", s)
	}
	return `package main

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
` + imports.String() + `)

var clients []any

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		panic(err)
	}
	clients = []any{
` + clients.String() + `	}
	lambda.Start(func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) { return in, nil })
}
`
}

// runtimeAPI is a minimal Lambda Runtime API: it notes when a process
// first asks for the next invocation and holds the request.
type runtimeAPI struct {
	addr string
	next chan time.Time
}

func newRuntimeAPI(tb testing.TB) *runtimeAPI {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	r := &runtimeAPI{addr: ln.Addr().String(), next: make(chan time.Time, 1)}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasSuffix(req.URL.Path, "/runtime/invocation/next") {
			select {
			case r.next <- time.Now():
			default:
			}
			<-req.Context().Done()
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})}
	go func() { _ = srv.Serve(ln) }()
	tb.Cleanup(func() { _ = srv.Close() })
	return r
}

// initTime starts bin and returns the time to its first `next`.
func (r *runtimeAPI) initTime(tb testing.TB, bin string, env []string) time.Duration {
	tb.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(bin)
	cmd.Env = append(slices.Clone(env), "AWS_LAMBDA_RUNTIME_API="+r.addr)
	cmd.Stderr, cmd.Stdout = &stderr, &stderr
	exited := make(chan error, 1)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { exited <- cmd.Wait() }()
	defer func() { _ = cmd.Process.Kill(); <-exited }()
	select {
	case at := <-r.next:
		return at.Sub(start)
	case err := <-exited:
		exited <- err
		tb.Fatalf("%s exited before asking for an invocation (%v): %s", filepath.Base(filepath.Dir(bin)), err, stderr.String())
	case <-time.After(10 * time.Second):
		tb.Fatalf("%s did not ask for an invocation in 10 s: %s", filepath.Base(filepath.Dir(bin)), stderr.String())
	}
	return 0
}

func median(ds []time.Duration) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

func build(tb testing.TB, out, pkg string) int64 {
	tb.Helper()
	cmd := exec.Command("go", append(slices.Clone(buildFlags), "-o", out, pkg)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	fi, err := os.Stat(out)
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Size()
}

// BenchmarkColdStart builds every function as `make build` does (for the
// host's architecture) and, beside it, the floor: a bare aws-lambda-go
// binary linking the same AWS service clients. It reports both binaries'
// sizes and their init (process start → first Runtime API `next`, median
// of 15 starts, alternating), and the ratios the cost issue budgets
// (≤ 1.5×). A function that makes a network call before its first
// invocation fails here: nothing answers but the Runtime API.
func BenchmarkColdStart(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("Lambda binaries run on linux")
	}
	dir := b.TempDir()
	floorDir, err := os.MkdirTemp(".", ".floor-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(floorDir) })
	api := newRuntimeAPI(b)
	names := make([]string, 0, len(linked))
	for fn := range linked {
		names = append(names, fn)
	}
	sort.Strings(names)
	for _, fn := range names {
		b.Run(fn, func(b *testing.B) {
			bin := filepath.Join(dir, fn, "bootstrap")
			size := build(b, bin, "./"+fn)
			src := filepath.Join(floorDir, fn)
			if err := os.MkdirAll(src, 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(floorSource(linked[fn])), 0o644); err != nil {
				b.Fatal(err)
			}
			floorBin := filepath.Join(dir, fn+"-floor", "bootstrap")
			floorSize := build(b, floorBin, "./"+filepath.ToSlash(src))
			env := coldStartEnv(fn)
			var own, floor []time.Duration
			for b.Loop() {
				own, floor = own[:0], floor[:0]
				for range coldStartRuns {
					own = append(own, api.initTime(b, bin, env))
					floor = append(floor, api.initTime(b, floorBin, env))
				}
			}
			mo, mf := median(own), median(floor)
			b.ReportMetric(float64(size)/1e6, "MB")
			b.ReportMetric(float64(floorSize)/1e6, "floor-MB")
			b.ReportMetric(float64(size)/float64(floorSize), "size-x")
			b.ReportMetric(float64(mo.Microseconds())/1000, "init-ms")
			b.ReportMetric(float64(mf.Microseconds())/1000, "floor-init-ms")
			b.ReportMetric(float64(mo)/float64(mf), "init-x")
			b.ReportMetric(0, "ns/op")
		})
	}
}
