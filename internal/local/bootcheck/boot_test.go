package bootcheck_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/kit/afterward"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/retention"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook/providers"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	"github.com/siteswarm/eventplatform/internal/wire/catalog"
	"github.com/siteswarm/eventplatform/internal/wire/stripeeventbridgefn"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

// rieModule is AWS's Lambda Runtime Interface Emulator, built from its Go
// module (the version the module proxy serves), never vendored.
const rieModule = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@v0.0.0-20261030222936-bef5c4ba774d"

const root = "../../.."

// The boot stage: the dev stage with every consumer deployed (a subscriber
// per HTTP topic, a purge zone) and a Connect account map, so every binary
// and every way a function reads its configuration is in the template.
var bootContext = map[string]any{
	"stage":                "dev",
	"subscribers":          `{"billing.events":"https://billing.example.com/hook","notifications.events":"https://notify.example.com/hook","crm.sync":"https://crm.example.com/hook"}`,
	"purgeDefaultZone":     "023e105f4ecef8ad9ca31a8372d0c353",
	"purgeZones":           `{"acme":"9a7806061c88ada191ed06f989cc3dac"}`,
	"stripeAccountTenants": `{"acct_1PzB7sLkdIwHu7ix":"acme"}`,
	// Stripe's EventBridge path, so stripe-eventbridge is deployed.
	"stripeEventBridgeSource": "aws.partner/stripe.com/ed_bootcheck",
}

// Valid values for the stage's secrets, set as an operator sets them after
// the first deploy (the stack creates placeholders the functions refuse).
const adminKey = "boot-check-admin-key"

var secretValues = func() map[string]string {
	v := map[string]string{
		"StripeWebhookSecrets": `["whsec_Ym9vdC1jaGVjay1zdHJpcGUtc2VjcmV0"]`,
		"SubscriberSecret":     `["whsec_Ym9vdC1jaGVjay1zdWJzY3JpYmVyLXNlY3JldA=="]`,
		"AdminApiKey":          `["` + adminKey + `"]`,
		"CloudflareApiToken":   `["boot-check-cloudflare-token"]`,
		"StripeApiKey":         `["rk_test_bootcheck"]`,
	}
	// Every other provider's signing secrets, in the form its function
	// reads (a list, or lists by source): its local secret will do.
	for _, d := range providers.All() {
		id := webhookfn.For(d).Secrets[0].ID
		if _, ok := v[id]; ok {
			continue
		}
		list, _ := json.Marshal([]string{d.Local.Secret})
		v[id] = string(list)
		if d.Sources {
			v[id] = `{"` + d.LocalSource + `":` + string(list) + `}`
		}
	}
	return v
}()

func run(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %s: %s", name, strings.Join(args, " "), out)
}

func TestArtifactsBoot(t *testing.T) {
	if os.Getenv("EVP_BOOT_CHECK") != "1" {
		t.Skip("make boot-check runs this (EVP_BOOT_CHECK=1): it builds every function, the CDK app and AWS's Runtime Interface Emulator")
	}
	ctx := context.Background()
	tmp := t.TempDir()

	// The artifacts, as make build builds them (host architecture).
	list := exec.Command("go", "list", "-f", `{{if eq .Name "main"}}{{.Dir}}{{end}}`, "./functions/...")
	list.Dir = root
	out, err := list.Output()
	require.NoError(t, err)
	var roles []string
	for _, dir := range strings.Fields(string(out)) {
		roles = append(roles, filepath.Base(dir))
	}
	require.ElementsMatch(t, catalog.Binaries(), roles, "every binary is a function of the catalog")
	run(t, root, []string{"CGO_ENABLED=0"}, "go", "build", "-trimpath", "-tags", "lambda.norpc", "-o", filepath.Join(tmp, "build")+"/", "./functions/...")
	for _, role := range roles {
		require.NoError(t, os.MkdirAll(filepath.Join(tmp, "bin", role), 0o755))
		require.NoError(t, os.Rename(filepath.Join(tmp, "build", role), filepath.Join(tmp, "bin", role, "bootstrap")))
	}
	run(t, root, []string{"GOBIN=" + filepath.Join(tmp, "tools")}, "go", "install", rieModule)
	rie := filepath.Join(tmp, "tools", "aws-lambda-rie")

	// The template, synthesized by the CDK app as `cdk synth` runs it.
	run(t, filepath.Join(root, "infra", "cdk"), nil, "go", "build", "-o", filepath.Join(tmp, "cdk-app"), ".")
	var cdkJSON struct {
		Context map[string]any `json:"context"`
	}
	raw, err := os.ReadFile(filepath.Join(root, "cdk.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &cdkJSON))
	for k, v := range bootContext {
		cdkJSON.Context[k] = v
	}
	cdkJSON.Context["evp:assetDir"] = filepath.Join(tmp, "bin")
	ctxJSON, err := json.Marshal(cdkJSON.Context)
	require.NoError(t, err)
	run(t, root, []string{"CDK_OUTDIR=" + filepath.Join(tmp, "cdk.out"), "CDK_CONTEXT_JSON=" + string(ctxJSON),
		"JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=1", "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=1"}, filepath.Join(tmp, "cdk-app"))
	var tpl template
	raw, err = os.ReadFile(filepath.Join(tmp, "cdk.out", "evp-dev.template.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &tpl))
	tpl.mapAssets(t, filepath.Join(tmp, "bin"), filepath.Join(tmp, "cdk.out"), roles)
	// The template's rules, event source mappings and bucket notifications
	// are the local stack's.
	checkTriggers(t, tpl)

	// The local stack, and the resolver from the template's tokens to it.
	env := awslocaltest.NewEnv(t)
	res := newResolver(t, ctx, env, tpl)
	functions := map[string]resource{}
	for _, r := range tpl.Resources {
		if name, _ := r.Properties["FunctionName"].(string); r.Type == "AWS::Lambda::Function" && strings.HasPrefix(name, "evp-dev-") {
			functions[strings.TrimPrefix(name, "evp-dev-")] = r
		}
	}
	// boot starts a function's code as a deploy uploads it: the staged
	// asset its template names, with its template environment.
	booted := map[string]bool{}
	boot := func(name string) *instance {
		t.Helper()
		fn, ok := functions[name]
		require.True(t, ok, "the template deploys %s", name)
		key := fn.Properties["Code"].(map[string]any)["S3Key"].(string)
		booted[tpl.assetRoles[key]] = true
		staged := filepath.Join(tmp, "cdk.out", "asset."+strings.TrimSuffix(key, ".zip"), "bootstrap")
		return start(t, rie, staged, res.environment(t, fn, env))
	}

	// ingest stores an event and sends it to its topics.
	id := fmt.Sprintf("inq_boot_%d", time.Now().UnixNano())
	envl := map[string]any{"id": id, "tenantId": "acme", "type": "inquiry.created", "source": "storefront",
		"timestamp": time.Now().UTC().Format(time.RFC3339), "payload": map[string]any{"name": "Ada"}}
	var result envelope.Result
	ingest := boot("ingest")
	ingest.invoke(t, envl, &result)
	require.Equal(t, envelope.StatusEnqueued, result.Status, "%+v", result)
	rec, rows, err := env.Events().Load(ctx, "acme/"+id)
	require.NoError(t, err, "ingest stored the event in the stack's table")
	require.Equal(t, "acme", rec.Event.TenantID)
	require.Len(t, rows, 2)
	// It records its sends after its answer, held by its internal
	// extension (kit/afterward), which the emulator registers as Lambda
	// does.
	require.Eventually(t, func() bool {
		_, rows, err := env.Events().Load(ctx, "acme/"+id)
		enqueued := 0
		for _, r := range rows {
			if r.Status == outbox.StatusEnqueued {
				enqueued++
			}
		}
		return err == nil && enqueued == 2
	}, 10*time.Second, 50*time.Millisecond, "ingest recorded its sends after its answer")
	require.Contains(t, ingest.out.String(), "Internal agent "+afterward.ExtensionName, "ingest registered its afterward extension")
	crm := env.ReceiveAndDelete(ctx, env.Queue(topology.CRM).URL, 1, 10*time.Second)
	require.Len(t, crm, 1, "and sent it to crm.sync")

	// webhook-stripe reads its signing secrets (Secrets Manager) and the
	// Connect account map (SSM) at cold start, and refuses an unsigned body
	// (401 signature_missing, docs/webhooks.md).
	var webhookResp events.APIGatewayV2HTTPResponse
	boot("webhook-stripe").invoke(t, events.APIGatewayV2HTTPRequest{
		Version: "2.0", RawPath: "/webhook/stripe", Body: `{"id":"evt_unsigned","object":"event"}`,
		Headers:        map[string]string{"content-type": "application/json"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost, Path: "/webhook/stripe"}, RequestID: "boot"},
	}, &webhookResp)
	require.Equal(t, http.StatusUnauthorized, webhookResp.StatusCode, webhookResp.Body)
	require.Contains(t, webhookResp.Body, "signature_missing")

	// So does every other provider's function (its secrets, its tenant
	// map): an unsigned delivery is refused with 401 and a code.
	for _, d := range providers.All() {
		fn := webhookfn.FunctionName(d)
		if fn == "webhook-stripe" {
			continue
		}
		var resp events.APIGatewayV2HTTPResponse
		path := d.URLPath(d.LocalSource)
		boot(fn).invoke(t, events.APIGatewayV2HTTPRequest{
			Version: "2.0", RawPath: path, Body: `{"unsigned":true}`,
			Headers:        map[string]string{"content-type": "application/json"},
			PathParameters: map[string]string{"source": d.LocalSource},
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost, Path: path}, RequestID: "boot"},
		}, &resp)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s: %s", fn, resp.Body)
		require.Contains(t, resp.Body, `"code"`, fn)
	}

	// stripe-eventbridge reads the Connect account map (SSM) at cold start
	// and canonicalizes the Stripe event of an EventBridge event, as the
	// rule on the partner bus delivers it: a Connect event from an account
	// the map does not name is a function error (unknown_account), which
	// Lambda retries and then dead-letters, and no call of ingest (the
	// boot check serves no Lambda endpoint; the local stack's tests publish
	// through it).
	bridged, ok := stripe.PartnerEvent([]byte(`{"id":"evt_boot_eb","object":"event","type":"invoice.paid","created":1700000000,"account":"acct_boot_unmapped","data":{"object":{"id":"in_boot"}}}`),
		bootContext["stripeEventBridgeSource"].(string), "boot", time.Now())
	require.True(t, ok)
	bridgedBody, err := json.Marshal(bridged)
	require.NoError(t, err)
	bridgeResp, err := (&http.Client{Timeout: 60 * time.Second}).Post(boot(stripeeventbridgefn.Name).url, "application/json", bytes.NewReader(bridgedBody))
	require.NoError(t, err)
	bridgeRaw, err := io.ReadAll(bridgeResp.Body)
	require.NoError(t, err)
	bridgeResp.Body.Close()
	require.Contains(t, string(bridgeRaw), `"errorType"`, "a function error, for Lambda to retry")
	require.Contains(t, string(bridgeRaw), "unknown_account", string(bridgeRaw))

	// dlq-archiver turns the crm.sync message, dead-lettered, into an
	// incident.
	dlq := events.SQSEvent{Records: []events.SQSMessage{{
		MessageId: aws.ToString(crm[0].MessageId), ReceiptHandle: "boot", Body: aws.ToString(crm[0].Body),
		MessageAttributes: lambdaAttributes(crm[0].MessageAttributes), EventSource: "aws:sqs", AWSRegion: awslocal.Region,
		EventSourceARN: env.Queue(topology.CRM).DLQARN, Attributes: map[string]string{"ApproximateReceiveCount": "5"},
	}}}
	var archived events.SQSEventResponse
	boot("dlq-archiver").invoke(t, dlq, &archived)
	require.Empty(t, archived.BatchItemFailures)
	incidentID := incident.ID("acme/"+id, topology.CRM)
	_, err = env.Incidents().Get(ctx, incidentID)
	require.NoError(t, err, "the archiver opened the incident in the stack's table")

	// replay reads it back.
	var view map[string]any
	boot("replay").invoke(t, map[string]any{"action": "get", "incidentId": incidentID}, &view)
	require.NotContains(t, view, "error", "%v", view)
	require.Contains(t, fmt.Sprint(view), incidentID)

	// admin-api checks its bearer key (Secrets Manager) and the stack's
	// tables and queues.
	var health events.APIGatewayV2HTTPResponse
	boot("admin-api").invoke(t, events.APIGatewayV2HTTPRequest{
		Version: "2.0", RawPath: "/admin/health", Headers: map[string]string{"authorization": "Bearer " + adminKey},
		RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodGet, Path: "/admin/health"}, RequestID: "boot"},
	}, &health)
	require.Equal(t, http.StatusOK, health.StatusCode, health.Body)

	// purge-api looks a job up in the purge table: null, no such job (a
	// table it cannot read answers code unavailable).
	status := map[string]any{"unread": true}
	boot("purge-api").invoke(t, map[string]any{"op": "getPurgeStatus", "jobId": "pj_" + strings.Repeat("0", 32)}, &status)
	require.Nil(t, status, "no such job")

	// Each consumer sends a message it cannot parse to its own DLQ.
	for _, c := range []struct{ fn, topic string }{
		{"consumer-billing-events", topology.Billing}, {"consumer-audit-events", topology.Audit}, {"consumer-cache-purge", topology.CachePurge},
	} {
		q := env.Queue(c.topic)
		var resp events.SQSEventResponse
		boot(c.fn).invoke(t, events.SQSEvent{Records: []events.SQSMessage{{
			MessageId: "poison-" + c.topic, ReceiptHandle: "boot", Body: "not an envelope", EventSource: "aws:sqs",
			EventSourceARN: q.ARN, AWSRegion: awslocal.Region, Attributes: map[string]string{"ApproximateReceiveCount": "1"},
		}}}, &resp)
		require.Empty(t, resp.BatchItemFailures, c.fn)
		require.Len(t, env.ReceiveAndDelete(ctx, q.DLQURL, 1, 10*time.Second), 1, "%s dead-lettered the poison message", c.fn)
	}

	// jobs-worker looks the wake's job up (there is none: acknowledged);
	// jobs-sweep sweeps the due index.
	var woke events.SQSEventResponse
	boot("jobs-worker").invoke(t, events.SQSEvent{Records: []events.SQSMessage{{
		MessageId: "wake", ReceiptHandle: "boot", EventSource: "aws:sqs", EventSourceARN: env.Resources.JobsQueue.ARN, AWSRegion: awslocal.Region,
		Body:       `{"tenantId":"acme","idempotencyKey":"boot","payload":{"kind":"tenant-export","jobId":"job_` + strings.Repeat("0", 32) + `","generation":1}}`,
		Attributes: map[string]string{"ApproximateReceiveCount": "1"},
	}}}, &woke)
	require.Empty(t, woke.BatchItemFailures)

	// import-trigger starts a file-import job for an S3 notification of a
	// file under imports/acme/ in the stack's bucket.
	note, err := json.Marshal(map[string]any{"Records": []events.S3EventRecord{{
		EventVersion: "2.1", EventSource: "aws:s3", AWSRegion: awslocal.Region, EventName: "ObjectCreated:Put",
		S3: events.S3Entity{Bucket: events.S3Bucket{Name: env.Resources.Bucket}, Object: events.S3Object{Key: "imports/acme/boot.ndjson", Size: 10, VersionID: "boot-v1"}},
	}}})
	require.NoError(t, err)
	var triggered events.SQSEventResponse
	boot("import-trigger").invoke(t, events.SQSEvent{Records: []events.SQSMessage{{
		MessageId: "s3-note", ReceiptHandle: "boot", EventSource: "aws:sqs", EventSourceARN: env.Resources.ImportsQueue.ARN, AWSRegion: awslocal.Region, Body: string(note),
		Attributes: map[string]string{"ApproximateReceiveCount": "1"},
	}}}, &triggered)
	require.Empty(t, triggered.BatchItemFailures)
	imports, err := (&dynamo.Jobs{Client: env.DynamoDB, Table: env.Resources.JobsTable}).List(ctx, jobs.ListParams{TenantID: "acme", Kind: jobkinds.KindFileImport, Limit: 10})
	require.NoError(t, err)
	require.Len(t, imports.Jobs, 1, "import-trigger started the import in the stack's jobs table")
	require.Contains(t, string(imports.Jobs[0].Args), "imports/acme/boot.ndjson")

	// Every schedule of every function fires its input (EventBridge's
	// scheduled event when it has none) at its booted binary, as the
	// template's rules do: the sweeper sweeps the stack's outbox index,
	// jobs-sweep sweeps the due index and starts the day's reconciliation
	// and retention expiries (a tenant with a retention policy gets one),
	// and subscriber-health moves the stack's topics (all healthy: no
	// record, no mapping touched).
	_, err = (&dynamo.Retention{Client: env.DynamoDB, Table: env.Resources.JobsTable}).Put(ctx, retention.Policy{TenantID: "acme", EventsDays: 30})
	require.NoError(t, err)
	fired := map[string]bool{}
	for _, f := range catalog.All() {
		for _, sch := range f.Schedules {
			var in any = events.EventBridgeEvent{Version: "0", DetailType: "Scheduled Event", Source: "aws.events", Time: time.Now().UTC(),
				Region: awslocal.Region, Resources: []string{"arn:aws:events:" + awslocal.Region + ":" + awslocal.AccountID + ":rule/evp-dev-" + sch.Rule}, Detail: json.RawMessage(`{}`)}
			if sch.Input != nil {
				in = sch.Input
			}
			var out map[string]any
			boot(f.Name).invoke(t, in, &out)
			fired[sch.Rule] = true
			switch sch.Rule {
			case "outbox-sweep":
				require.Contains(t, out, "due", "%v", out)
			case "retention-expiry":
				require.Contains(t, fmt.Sprint(out["jobs"]), "acme", "a purge for the tenant with a policy: %v", out)
			case "subscriber-health":
				require.NotEmpty(t, out["topics"], "%v", out)
				for _, tr := range out["topics"].([]any) {
					topic := tr.(map[string]any)
					require.Equal(t, "closed", topic["state"], "%v", topic)
					require.Empty(t, topic["error"], "%v", topic)
				}
			}
		}
	}
	rules := 0
	for _, f := range catalog.All() {
		rules += len(f.Schedules)
	}
	require.Len(t, fired, rules, "every schedule fired: %v", fired)

	// Every binary booted under the emulator at least once.
	require.Len(t, booted, len(roles), "every bootstrap: %v", booted)
}

func lambdaAttributes(in map[string]sqsAttr) map[string]events.SQSMessageAttribute {
	out := map[string]events.SQSMessageAttribute{}
	for k, v := range in {
		out[k] = events.SQSMessageAttribute{StringValue: v.StringValue, DataType: aws.ToString(v.DataType)}
	}
	return out
}

// instance is one function under the emulator.
type instance struct {
	url string
	out *bytes.Buffer
}

// start runs the bootstrap under the emulator with exactly env (nothing
// of the test's own environment leaks in) and waits for it to listen.
func start(t *testing.T, rie, bootstrap string, env []string) *instance {
	t.Helper()
	api, rapid := freePort(t), freePort(t)
	out := &syncBuffer{}
	cmd := exec.Command(rie, "--runtime-interface-emulator-address", api, "--runtime-api-address", rapid, bootstrap)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s under the emulator:\n%s", filepath.Base(filepath.Dir(bootstrap)), out.String())
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.Dial("tcp", api)
		if err == nil {
			c.Close()
			break
		}
		require.True(t, time.Now().Before(deadline), "the emulator listens on %s: %s", api, out.String())
		time.Sleep(50 * time.Millisecond)
	}
	return &instance{url: "http://" + api + "/2015-03-31/functions/function/invocations", out: &out.Buffer}
}

// invoke sends one event and decodes the function's answer; a function
// error (the emulator's errorType answer) fails the test with its output.
func (i *instance) invoke(t *testing.T, in, out any) {
	t.Helper()
	body, err := json.Marshal(in)
	require.NoError(t, err)
	client := &http.Client{Timeout: 60 * time.Second}
	resp, err := client.Post(i.url, "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var fnErr struct {
		ErrorType    string `json:"errorType"`
		ErrorMessage string `json:"errorMessage"`
	}
	_ = json.Unmarshal(raw, &fnErr)
	require.Empty(t, fnErr.ErrorType, "function error %s: %s", fnErr.ErrorType, fnErr.ErrorMessage)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	require.NoError(t, json.Unmarshal(raw, out), string(raw))
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

type syncBuffer struct {
	mu sync.Mutex
	bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.String()
}
