package functions_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook/providers"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/ingestfn"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

// buildFlags are `make build`'s, for the host's architecture (the binary
// has to run here to be timed).
var buildFlags = []string{"build", "-trimpath", "-tags", "lambda.norpc", "-ldflags=-s -w"}

// coldStartRuns is how many starts each binary's median is taken over.
const coldStartRuns = 15

// benchSecret signs the benchmark's Stripe events (the webhook reads it
// by value, STRIPE_WEBHOOK_SECRET).
const benchSecret = "whsec_bench_secret_1234567890"

// coldStartEnv is a deployed stage's environment, every function's
// variables at once (each reads its own). Names are fake unless r is
// set: then the tables and queues are the emulators' and every AWS call
// goes to the endpoints in r.
func coldStartEnv(fn string, r *coldRig) []string {
	// Every topic of the topology has its queue (a function refuses a
	// map that misses one).
	fake := map[string]string{}
	for _, tp := range topology.Default().Topics {
		fake[tp.Name] = "https://sqs.eu-west-1.amazonaws.com/123456789012/q-" + strings.ReplaceAll(tp.Name, ".", "-")
	}
	queues := jsonOf(fake)
	arns := strings.NewReplacer("https://sqs.eu-west-1.amazonaws.com/123456789012/", "arn:aws:sqs:eu-west-1:123456789012:").Replace(queues)
	topic := map[string]string{"consumer-http": topology.Billing, "consumer-archive": topology.Audit, "consumer-purge": topology.CachePurge}[fn]
	eventsTable, incidents, jobs, region := "evp-bench-events", "evp-bench-incidents", "evp-bench-jobs", "eu-west-1"
	queueURL := func(t string) string {
		q := strings.ReplaceAll(strings.ReplaceAll(t, ".", "-"), "events", "")
		return "https://sqs.eu-west-1.amazonaws.com/123456789012/" + q
	}
	dlqURL := func(t string) string { return queueURL(t) + "-dlq" }
	subscriber := "https://example.com/hook"
	if r != nil {
		res := r.env.Resources
		qs, dlqs, dlqARNs := map[string]string{}, map[string]string{}, map[string]string{}
		for name, q := range res.Queues {
			qs[name], dlqs[name], dlqARNs[name] = q.URL, q.DLQURL, q.DLQARN
		}
		queues, arns = jsonOf(qs), jsonOf(dlqARNs)
		eventsTable, incidents, jobs, region = res.EventsTable, res.IncidentsTable, res.JobsTable, awslocal.Region
		queueURL = func(t string) string { return qs[t] }
		dlqURL = func(t string) string { return dlqs[t] }
		subscriber = r.sink.URL + "/hook"
	}
	env := []string{
		"AWS_REGION=" + region, "AWS_ACCESS_KEY_ID=AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY=secret", "AWS_LAMBDA_FUNCTION_NAME=" + fn,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512", "AWS_LAMBDA_LOG_LEVEL=WARN", "HOME=" + os.TempDir(),
		"EVENTS_TABLE=" + eventsTable, "INCIDENTS_TABLE=" + incidents, "PURGE_TABLE=evp-bench-purge", "JOBS_TABLE=" + jobs, "ADMIN_TABLE=evp-bench-admin",
		"ARCHIVE_BUCKET=evp-bench-archive", "STAGE_NAME=evp-bench", "TOPIC_QUEUE_URLS=" + queues, "TOPIC_DLQ_URLS=" + queues, "TOPIC_DLQ_ARNS=" + arns,
		"JOBS_QUEUE_URL=https://sqs.eu-west-1.amazonaws.com/123456789012/jobs",
		"INGEST_FUNCTION_ARN=arn:aws:lambda:" + region + ":123456789012:function:evp-bench-ingest",
		// Secrets by value: a function that cannot serve without its
		// secret reads it at cold start (one GetSecretValue, not timed
		// here; everything else must wait for an invocation).
		"STRIPE_WEBHOOK_SECRET=" + benchSecret, "SUBSCRIBER_SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		"ADMIN_API_KEY=bench-admin-key-123456", "CLOUDFLARE_API_TOKEN=cf-bench-token", "STRIPE_API_KEY=sk_test_bench",
		`STRIPE_TENANT_MAP={"default":"acme"}`, `PURGE_ZONES={"default":"zone1"}`,
		"ALERT_TOPIC_ARN=arn:aws:sns:eu-west-1:123456789012:alerts", "SUBSCRIBER_URL=" + subscriber,
	}
	// Every other provider's signing secrets by value, as the local stack
	// sets them (Stripe's is benchSecret above).
	for _, d := range providers.All() {
		if v := webhookfn.VarsOf(d); d.Local.Secret != "" && v.Secret != "STRIPE_WEBHOOK_SECRET" {
			env = append(env, v.Secret+"="+d.Local.Secret)
		}
	}
	if r != nil {
		env = append(env, "AWS_ENDPOINT_URL_DYNAMODB="+r.dynamo.url, "AWS_ENDPOINT_URL_SQS="+r.sqs.url,
			"AWS_ENDPOINT_URL_LAMBDA="+r.lambda.URL, "AWS_ENDPOINT_URL_S3="+r.env.Emulators.S3Endpoint)
	}
	if topic != "" {
		env = append(env, "CONSUMER_TOPIC="+topic, "CONSUMER_QUEUE_URL="+queueURL(topic), "CONSUMER_DLQ_URL="+dlqURL(topic))
	}
	return env
}

func jsonOf(m map[string]string) string {
	b, _ := json.Marshal(m)
	return string(b)
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

// coldRig is where first invocations run: the emulators with the stage's
// tables and queues, a recorder in front of DynamoDB and SQS, a Lambda
// Invoke endpoint standing in for ingest, and a subscriber.
type coldRig struct {
	env          *awslocaltest.Env
	dynamo, sqs  *recorder
	lambda, sink *httptest.Server

	mu sync.Mutex
	// invoked and posted are the Lambda invocations and subscriber
	// requests since the last takeOthers; invokePayload the last payload
	// ingest was invoked with.
	invoked, posted []call
	invokePayload   []byte
	// forward, when set, answers an Invoke by running a cold ingest with
	// its payload; otherwise the rig answers as ingest does for a new
	// event.
	forward func(payload []byte) []byte
	ingest  *ingest.Service
}

func newColdRig(tb testing.TB) *coldRig {
	tb.Helper()
	r := &coldRig{env: awslocaltest.NewEnv(tb)}
	r.dynamo = newRecorder(tb, "dynamodb", r.env.Emulators.DynamoDBEndpoint)
	r.sqs = newRecorder(tb, "sqs", r.env.Emulators.SQSEndpoint)
	r.lambda = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		payload, _ := io.ReadAll(req.Body)
		name := strings.TrimSuffix(strings.TrimPrefix(req.URL.Path, "/2015-03-31/functions/"), "/invocations")
		r.mu.Lock()
		r.invoked = append(r.invoked, call{Service: "lambda", Op: "Invoke", Target: name})
		r.invokePayload = payload
		forward := r.forward
		r.mu.Unlock()
		w.Header().Set("X-Amz-Executed-Version", "$LATEST")
		if forward != nil {
			_, _ = w.Write(forward(payload))
			return
		}
		var ev struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(payload, &ev)
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "enqueued", "eventId": ev.ID, "topics": []string{topology.Billing}, "pendingTopics": []string{}})
	}))
	tb.Cleanup(r.lambda.Close)
	r.sink = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		r.posted = append(r.posted, call{Service: "http", Op: "POST", Target: r.sink.URL + req.URL.Path})
		r.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	tb.Cleanup(r.sink.Close)
	return r
}

// calls are the outside calls since the last take, AWS calls first (as
// made, per service), then invocations and subscriber requests.
func (r *coldRig) calls() []call {
	out := append(r.dynamo.take(), r.sqs.take()...)
	r.mu.Lock()
	defer r.mu.Unlock()
	out = append(append(out, r.invoked...), r.posted...)
	r.invoked, r.posted = nil, nil
	return out
}

// stripeEvent is a fresh, signed Stripe invoice.paid as API Gateway hands
// it to the webhook (payload format 2.0).
func stripeEvent(tb testing.TB, id string) []byte {
	tb.Helper()
	raw, err := os.ReadFile("../events/stripe/invoice.paid.json")
	if err != nil {
		tb.Fatal(err)
	}
	body := bytes.Replace(raw, []byte(`"evt_1PzB7sLkdIwHu7ixQm3nT0aX"`), []byte(`"`+id+`"`), 1)
	req := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "POST /webhook/stripe", RawPath: "/webhook/stripe", Body: string(body),
		Headers: map[string]string{"content-type": "application/json", strings.ToLower(stripe.SignatureHeader): stripe.Sign(body, time.Now(), benchSecret)},
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "req-" + id,
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost, Path: "/webhook/stripe", SourceIP: "3.18.12.63"}},
	}
	b, err := json.Marshal(req)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// firstEvent makes the event of run i of a function whose first
// invocation is timed: a Stripe event for the webhook, the envelope the
// webhook sent for ingest, and for the billing consumer the message ingest
// queued (the rig keeps the one the last ingest run sent).
type firstEvent func(tb testing.TB, i int) []byte

// timed are the functions whose first invocation the benchmark times, in
// the order it runs them (each feeds the next).
var timed = []string{"webhook-stripe", "ingest", "consumer-http"}

// BenchmarkColdStart builds every function as `make build` does (for the
// host's architecture) and, beside it, the floor: a bare aws-lambda-go
// binary linking the same AWS service clients. It reports both binaries'
// sizes and their init (process start → the end of init: the first
// Runtime API `next`, and its internal extension's if it registered one;
// median of 15 starts, alternating). For the Stripe path's functions —
// webhook-stripe, ingest, consumer-http — it times the first invocation
// too, against the emulators: a first Stripe event into the webhook
// (ingest's answer stood in for), the envelope the webhook sent into
// ingest, the message ingest queued into the billing consumer (its
// subscriber answering at once). Their floors make, on their first
// invocation, the same calls the function made (recorded in front of the
// emulators: each AWS operation on the same table, queue or function with
// the same SDK client, and the consumer's request to its subscriber) and
// nothing else. cold-x is (init + first invocation) ÷ the floor's, the
// ratio the performance issue budgets (≤ 1.5×); stripe-ack is a first
// Stripe event through a cold webhook and a cold ingest (its init inside
// the webhook's invocation, as on a stage) against the two floors. A
// function that makes a network call before its first invocation fails:
// nothing answers but the Runtime API.
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
	rig := newColdRig(b)
	bins := map[string]string{}
	sizes := map[string]int64{}
	// The functions (and their floors) are built here, from this source
	// tree: a before/after comparison runs the benchmark from two worktrees,
	// not two test binaries of one tree.
	binOf := func(fn string) string {
		if bins[fn] == "" {
			bins[fn] = filepath.Join(dir, fn, "bootstrap")
			sizes[fn] = build(b, bins[fn], "./"+fn)
		}
		return bins[fn]
	}
	floorOf := func(fn string, calls []call) (string, int64) {
		src, err := floorSource(linked[fn], calls)
		if err != nil {
			b.Fatal(err)
		}
		pkg := filepath.Join(floorDir, fn)
		if err := os.MkdirAll(pkg, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, "main.go"), []byte(src), 0o644); err != nil {
			b.Fatal(err)
		}
		bin := filepath.Join(dir, fn+"-floor", "bootstrap")
		return bin, build(b, bin, "./"+filepath.ToSlash(pkg))
	}

	// The functions whose first invocation is timed: one recording run
	// each (in the order the Stripe path feeds them), then their floors.
	firsts := rig.firstEvents(b)
	recorded := map[string][]call{}
	for i, fn := range timed {
		start(b, binOf(fn), fn, coldStartEnv(fn, rig), firsts[fn](b, -1-i))
		recorded[fn] = rig.calls()
		if len(recorded[fn]) == 0 {
			b.Fatalf("%s made no call on its first invocation", fn)
		}
	}

	names := make([]string, 0, len(linked))
	for fn := range linked {
		names = append(names, fn)
	}
	sort.Strings(names)
	for _, fn := range names {
		b.Run(fn, func(b *testing.B) {
			bin := binOf(fn)
			floorBin, floorSize := floorOf(fn, recorded[fn])
			var env []string
			ev := firsts[fn]
			if ev != nil {
				env = coldStartEnv(fn, rig)
			} else {
				env = coldStartEnv(fn, nil)
			}
			var own, floor []coldRun
			for b.Loop() {
				own, floor = own[:0], floor[:0]
				for i := range coldStartRuns {
					var e []byte
					if ev != nil {
						e = ev(b, 2*i)
					}
					own = append(own, start(b, bin, fn, env, e))
					rig.calls()
					if ev != nil {
						e = ev(b, 2*i+1)
					}
					floor = append(floor, start(b, floorBin, fn, env, e))
					rig.calls()
				}
			}
			b.ReportMetric(float64(sizes[fn])/1e6, "MB")
			b.ReportMetric(float64(floorSize)/1e6, "floor-MB")
			b.ReportMetric(float64(sizes[fn])/float64(floorSize), "size-x")
			report(b, own, floor, ev != nil)
		})
	}

	// A first Stripe event through a cold webhook and a cold ingest.
	b.Run("stripe-ack", func(b *testing.B) {
		webhookFloor, _ := floorOf("webhook-stripe", recorded["webhook-stripe"])
		ingestFloor, _ := floorOf("ingest", recorded["ingest"])
		var own, floor []coldRun
		run := func(webhook, ingest string, i int) coldRun {
			rig.mu.Lock()
			rig.forward = func(payload []byte) []byte {
				return start(b, ingest, "ingest", coldStartEnv("ingest", rig), payload).answer
			}
			rig.mu.Unlock()
			defer func() {
				rig.mu.Lock()
				rig.forward = nil
				rig.mu.Unlock()
				rig.calls()
			}()
			r := start(b, webhook, "webhook-stripe", coldStartEnv("webhook-stripe", rig), stripeEvent(b, fmt.Sprintf("evt_ack_%d_%d", time.Now().UnixNano(), i)))
			if webhook == binOf("webhook-stripe") {
				var res events.APIGatewayV2HTTPResponse
				if err := json.Unmarshal(r.answer, &res); err != nil || res.StatusCode != http.StatusOK {
					b.Fatalf("the webhook answered %s (%v)", r.answer, err)
				}
			}
			return r
		}
		for b.Loop() {
			own, floor = own[:0], floor[:0]
			for i := range coldStartRuns {
				own = append(own, run(binOf("webhook-stripe"), binOf("ingest"), 2*i))
				floor = append(floor, run(webhookFloor, ingestFloor, 2*i+1))
			}
		}
		report(b, own, floor, true)
	})
}

// report reports the medians of own and floor runs and their ratios.
func report(b *testing.B, own, floor []coldRun, first bool) {
	pick := func(rs []coldRun, f func(coldRun) time.Duration) time.Duration {
		ds := make([]time.Duration, len(rs))
		for i, r := range rs {
			ds[i] = f(r)
		}
		return median(ds)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	initOf := func(r coldRun) time.Duration { return r.init }
	mo, mf := pick(own, initOf), pick(floor, initOf)
	b.ReportMetric(ms(mo), "init-ms")
	b.ReportMetric(ms(mf), "floor-init-ms")
	b.ReportMetric(float64(mo)/float64(mf), "init-x")
	if first {
		firstOf := func(r coldRun) time.Duration { return r.first }
		coldOf := func(r coldRun) time.Duration { return r.init + r.first }
		fo, ff := pick(own, firstOf), pick(floor, firstOf)
		co, cf := pick(own, coldOf), pick(floor, coldOf)
		b.ReportMetric(ms(fo), "first-ms")
		b.ReportMetric(ms(ff), "floor-first-ms")
		b.ReportMetric(ms(co), "cold-ms")
		b.ReportMetric(ms(cf), "floor-cold-ms")
		b.ReportMetric(float64(co)/float64(cf), "cold-x")
		// The same on CPU time (init and first invocation), which the
		// machine's load does not stretch as it does the wall clock.
		cpuOf := func(r coldRun) time.Duration { return r.cpu }
		po, pf := pick(own, cpuOf), pick(floor, cpuOf)
		b.ReportMetric(ms(po), "cold-cpu-ms")
		b.ReportMetric(ms(pf), "floor-cold-cpu-ms")
		b.ReportMetric(float64(po)/float64(pf), "cold-cpu-x")
		initCPU := func(r coldRun) time.Duration { return r.initCPU }
		b.ReportMetric(ms(pick(own, initCPU)), "init-cpu-ms")
		b.ReportMetric(ms(pick(floor, initCPU)), "floor-init-cpu-ms")
	}
	b.ReportMetric(0, "ns/op")
}

// firstEvents are the events of the timed functions' runs (i < 0: the
// recording run).
func (r *coldRig) firstEvents(tb testing.TB) map[string]firstEvent {
	billing := r.env.Queue(topology.Billing)
	nonce := time.Now().UnixNano()
	var (
		mu       sync.Mutex
		envelope []byte // what the webhook sent ingest (its recording run)
		eventID  string
		last     *string // the receipt of the consumer's last message
	)
	return map[string]firstEvent{
		"webhook-stripe": func(tb testing.TB, i int) []byte {
			id := fmt.Sprintf("evt_cold_%d_w%d", nonce, i)
			mu.Lock()
			defer mu.Unlock()
			if eventID == "" {
				eventID = id
			}
			return stripeEvent(tb, id)
		},
		"ingest": func(tb testing.TB, i int) []byte {
			mu.Lock()
			defer mu.Unlock()
			if envelope == nil {
				r.mu.Lock()
				envelope = r.invokePayload
				r.mu.Unlock()
				if envelope == nil {
					tb.Fatal("the webhook invoked no ingest")
				}
			}
			return bytes.ReplaceAll(envelope, []byte(eventID), []byte(fmt.Sprintf("evt_cold_%d_i%d", nonce, i)))
		},
		"consumer-http": func(tb testing.TB, i int) []byte {
			// A fresh event published through ingest in this process
			// (straight to the emulators, so none of its calls is the
			// consumer's), then its message as the event source hands it
			// over.
			mu.Lock()
			if envelope == nil {
				mu.Unlock()
				tb.Fatal("the webhook invoked no ingest")
			}
			id := fmt.Sprintf("evt_cold_%d_c%d", nonce, i)
			ev := bytes.ReplaceAll(envelope, []byte(eventID), []byte(id))
			mu.Unlock()
			// The last run's message is done: delete it, as the event
			// source mapping does after a success (a FIFO queue hands out
			// nothing of its group while it is in flight).
			if last != nil {
				if _, err := r.env.Clients.SQS.DeleteMessage(tb.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(billing.URL), ReceiptHandle: last}); err != nil {
					tb.Fatal(err)
				}
			}
			if res, err := r.publisher(tb).Publish(tb.Context(), ev); err != nil || res.Status != "enqueued" {
				tb.Fatalf("publish %s: %+v %v", id, res, err)
			}
			msgs := receiveOne(tb, r, billing.URL, id)
			last = msgs[0].ReceiptHandle
			b, err := json.Marshal(lambdalocal.SQSEvent(billing.ARN, msgs))
			if err != nil {
				tb.Fatal(err)
			}
			return b
		},
	}
}

// publisher is an ingest service in this process, configured as the
// ingest function is, with clients that go to the emulators directly.
func (r *coldRig) publisher(tb testing.TB) *ingest.Service {
	tb.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ingest != nil {
		return r.ingest
	}
	vars := map[string]string{}
	for _, kv := range coldStartEnv("ingest", r) {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	cfg, err := ingestfn.Load(envconf.FromMap(vars), topology.Default())
	if err != nil {
		tb.Fatal(err)
	}
	svc, err := ingestfn.New(cfg, r.env.Clients.Data(), wire.Runtime{})
	if err != nil {
		tb.Fatal(err)
	}
	r.ingest = svc
	return svc
}

// receiveOne receives the next message on url whose body names prefix
// (deleting the floors' empty ones on the way), and leaves it in flight
// for the consumer to claim and delete.
func receiveOne(tb testing.TB, r *coldRig, url, prefix string) []sqstypes.Message {
	tb.Helper()
	client := r.env.Clients.SQS
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		out, err := client.ReceiveMessage(tb.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 1,
			WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		if err != nil {
			tb.Fatal(err)
		}
		for _, m := range out.Messages {
			if strings.Contains(aws.ToString(m.Body), prefix) {
				return []sqstypes.Message{m}
			}
			if _, err := client.DeleteMessage(tb.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				tb.Fatal(err)
			}
		}
	}
	tb.Fatalf("no message of this benchmark on %s", url)
	return nil
}
