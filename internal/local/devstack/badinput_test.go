package devstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/kit/pagecursor"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/webhook/providers"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
)

// writeOps are the AWS operations that change state.
var writeOps = []string{
	"DynamoDB.PutItem", "DynamoDB.UpdateItem", "DynamoDB.DeleteItem", "DynamoDB.TransactWriteItems", "DynamoDB.BatchWriteItem", "DynamoDB.BatchExecuteStatement",
	"SQS.SendMessage", "SQS.SendMessageBatch", "SQS.DeleteMessage", "SQS.DeleteMessageBatch",
	"S3.PutObject", "S3.DeleteObject", "S3.CopyObject", "SNS.Publish",
}

// stackState is everything bad input could have written: every table's
// items and every object in the bucket.
type stackState struct {
	items   map[string][]string
	objects []string
}

// settled waits until the stack's own start-up traffic is over: S3 sends
// the imports queue a test event when the bucket's notifications are set,
// and import-trigger's poller receives and deletes it (a write the bad
// input tests would otherwise count against the request they watch).
func settled(t *testing.T, st *devstack.Stack) {
	t.Helper()
	require.Eventually(t, func() bool {
		out, err := st.Clients.SQS.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
			QueueUrl:       aws.String(st.Resources.ImportsQueue.URL),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible},
		})
		return err == nil && out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)] == "0" &&
			out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)] == "0"
	}, 30*time.Second, 100*time.Millisecond, "the imports queue's test event is consumed")
}

func snapshot(t *testing.T, st *devstack.Stack) stackState {
	t.Helper()
	ctx := context.Background()
	s := stackState{items: map[string][]string{}}
	ddb := st.Emulators.DynamoDB()
	for _, table := range []string{st.Resources.EventsTable, st.Resources.IncidentsTable, st.Resources.PurgeTable} {
		p := dynamodb.NewScanPaginator(ddb, &dynamodb.ScanInput{TableName: aws.String(table)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			require.NoError(t, err)
			for _, it := range page.Items {
				b, err := json.Marshal(it)
				require.NoError(t, err)
				s.items[table] = append(s.items[table], string(b))
			}
		}
		slices.Sort(s.items[table])
	}
	out, err := st.Emulators.S3().ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(st.Resources.Bucket)})
	require.NoError(t, err)
	for _, o := range out.Contents {
		s.objects = append(s.objects, aws.ToString(o.Key))
	}
	return s
}

// TestBadInputOnEveryPublicSurface sends malformed, hostile and oversize
// input to every public surface of the running platform — the Stripe
// webhook over HTTP (signed, so it gets past verification), ingest and
// replay through the Lambda Invoke API, the admin API over HTTP — and
// checks each answer: a machine-readable code, no function error, no
// panic, and nothing written (no write call, tables and bucket unchanged).
func TestBadInputOnEveryPublicSurface(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	calls := awslocal.NewCalls()
	st, err := devstack.Start(ctx, devstack.Options{
		Addr: "127.0.0.1:0", Log: logging.Discard(), Env: envconf.FromMap(nil),
		APIOptions: []func(*middleware.Stack) error{calls.APIOption},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	lc := awslocal.NewLambdaClient(awslocal.NewConfig(), st.URL())

	// One real event and incident, so cross-tenant and replay cases have a
	// target that exists.
	raw, err := os.ReadFile("../../../events/ingest/valid/storefront-inquiry-created.json")
	require.NoError(t, err)
	out, err := lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("ingest"), Payload: raw})
	require.NoError(t, err)
	require.Nil(t, out.FunctionError)
	var ev struct {
		ID       string `json:"id"`
		TenantID string `json:"tenantId"`
	}
	require.NoError(t, json.Unmarshal(raw, &ev))
	// Let the consumers finish with it before taking the snapshot.
	events := &dynamo.Events{Client: st.Emulators.DynamoDB(), Table: st.Resources.EventsTable}
	require.Eventually(t, func() bool {
		_, rows, err := events.Load(ctx, ev.TenantID+"/"+ev.ID)
		return err == nil && ledger.Summarize(rows) == "completed"
	}, 20*time.Second, 50*time.Millisecond)
	settled(t, st)
	before := snapshot(t, st)

	huge := strings.Repeat("x", 2<<20)
	deep := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	// envelopeWith is a valid envelope with one member's raw JSON value
	// replaced (or added).
	envelopeWith := func(field, value string) string {
		fields := [][2]string{{"id", `"evt_bad"`}, {"tenantId", `"acme"`}, {"type", `"inquiry.created"`}, {"source", `"storefront"`},
			{"timestamp", `"2026-12-02T11:00:00Z"`}, {"payload", `{"k":"v"}`}}
		var b strings.Builder
		b.WriteString("{")
		found := false
		for i, f := range fields {
			if i > 0 {
				b.WriteString(",")
			}
			v := f[1]
			if f[0] == field {
				v, found = value, true
			}
			b.WriteString(`"` + f[0] + `":` + v)
		}
		if !found {
			b.WriteString(`,"` + field + `":` + value)
		}
		return b.String() + "}"
	}
	stripeEvent := func(mut string) string {
		return `{"id":"evt_bad_stripe","object":"event","type":"invoice.paid","created":1764676800,` + mut + `"data":{"object":{"id":"in_1","metadata":{"tenant_id":"acme"}}}}`
	}

	type answer struct {
		status int
		code   string
	}
	webhook := func(body string) answer {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, st.URL()+devstack.StripeWebhookPath, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set(stripe.SignatureHeader, stripe.Sign([]byte(body), time.Now(), devstack.DefaultStripeSecret))
		return httpAnswer(t, req)
	}
	// invoke calls ingest with payload: its answer, or (nil and) the
	// Lambda service's refusal before the function ran (not JSON, too
	// large): a coded service error.
	invoke := func(payload string) ([]byte, *answer) {
		t.Helper()
		out, err := lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("ingest"), Payload: []byte(payload)})
		if err != nil {
			return nil, &answer{status: 400, code: serviceCode(err)}
		}
		require.Nil(t, out.FunctionError, "bad input is a result, never a function error: %s", out.Payload)
		return out.Payload, nil
	}
	ingest := func(payload string) answer {
		t.Helper()
		out, refused := invoke(payload)
		if refused != nil {
			return *refused
		}
		var res struct {
			Status string `json:"status"`
			Error  struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(out, &res))
		require.Equal(t, "rejected", res.Status, "%s", out)
		return answer{status: 400, code: res.Error.Code}
	}
	// A batch (a JSON array of envelopes): every envelope is answered,
	// each rejected; the answer's code is theirs (one code for all here).
	ingestBatch := func(payload string) answer {
		t.Helper()
		out, refused := invoke(payload)
		if refused != nil {
			return *refused
		}
		var reply envelope.BatchReply
		require.NoError(t, json.Unmarshal(out, &reply))
		codes := map[string]bool{}
		for _, r := range reply.Results {
			require.Equal(t, envelope.StatusRejected, r.Status, "%s", out)
			codes[string(r.Error.Code)] = true
		}
		require.Len(t, codes, 1, "%s", out)
		for c := range codes {
			return answer{status: 400, code: c}
		}
		return answer{}
	}
	replayCall := func(payload string) answer {
		t.Helper()
		out, err := lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(devstack.FunctionReplay), Payload: []byte(payload)})
		if err != nil {
			return answer{status: 400, code: serviceCode(err)}
		}
		require.Nil(t, out.FunctionError, "bad input is an answer, never a function error: %s", out.Payload)
		var res struct {
			Error *struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(out.Payload, &res), "%s", out.Payload)
		if res.Error == nil {
			return answer{status: 200}
		}
		return answer{status: 400, code: res.Error.Code}
	}
	purgeCall := func(payload string) answer {
		t.Helper()
		out, err := lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("purge-api"), Payload: []byte(payload)})
		if err != nil {
			return answer{status: 400, code: serviceCode(err)}
		}
		require.Nil(t, out.FunctionError, "bad input is an answer, never a function error: %s", out.Payload)
		var res struct {
			OK    bool `json:"ok"`
			Error *struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(out.Payload, &res), "%s", out.Payload)
		if res.Error == nil {
			return answer{status: 200}
		}
		return answer{status: 400, code: res.Error.Code}
	}
	admin := func(method, path, body string) answer {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, st.URL()+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+st.AdminKey())
		return httpAnswer(t, req)
	}
	incidentID := "inc_0123456789abcdef0123456789abcdef"

	cases := []struct {
		name string
		send func() answer
		code string // "" = any code
	}{
		// The Stripe webhook (signed with the local secret).
		{"webhook not json", func() answer { return webhook(`{"id": "evt_1", `) }, "invalid_event"},
		{"webhook array", func() answer { return webhook(`[{"id":"evt_1"}]`) }, "invalid_event"},
		{"webhook wrong types", func() answer { return webhook(`{"id":7,"object":"event","type":["x"],"created":"now"}`) }, "invalid_event"},
		{"webhook huge id", func() answer {
			return webhook(strings.Replace(stripeEvent(""), "evt_bad_stripe", strings.Repeat("e", 100000), 1))
		}, "invalid_id"},
		{"webhook oversize body", func() answer { return webhook(stripeEvent(`"pad":"` + huge + `",`)) }, "payload_too_large"},
		{"webhook deep nesting", func() answer { return webhook(stripeEvent(`"deep":` + deep + `,`)) }, "invalid_payload"},
		{"webhook duplicate keys", func() answer { return webhook(stripeEvent(`"id":"evt_other",`)) }, "invalid_envelope"},
		{"webhook invalid utf-8", func() answer { return webhook(stripeEvent("\"x\":\"\xff\xfe\",")) }, "invalid_event"},
		{"webhook raw NUL", func() answer { return webhook(stripeEvent("\"x\":\"a\x00b\",")) }, "invalid_event"},
		{"webhook path traversal id", func() answer {
			return webhook(strings.Replace(stripeEvent(""), "evt_bad_stripe", "../../etc/passwd", 1))
		}, "invalid_id"},
		{"webhook unmapped connect account", func() answer { return webhook(stripeEvent(`"account":"acct_attacker",`)) }, "unknown_account"},
		{"webhook unsigned", func() answer {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, st.URL()+devstack.StripeWebhookPath, strings.NewReader(stripeEvent("")))
			return httpAnswer(t, req)
		}, "signature_missing"},

		// Ingest through the Lambda Invoke API.
		{"ingest not json", func() answer { return ingest(`{"id":`) }, "InvalidRequestContentException"},
		{"ingest batch of non-objects", func() answer { return ingestBatch(`[1,"x",null]`) }, "invalid_envelope"},
		{"ingest batch of unknown sources", func() answer {
			e := `{"id":"evt_x","tenantId":"acme","type":"inquiry.created","source":"mallory","timestamp":"2026-12-02T11:00:00Z","payload":{}}`
			return ingestBatch(`[` + e + `,` + e + `]`)
		}, "unknown_source"},
		{"ingest batch too large", func() answer {
			return ingestBatch(`[` + strings.TrimSuffix(strings.Repeat(string(raw)+`,`, envelope.MaxBatch+1), `,`) + `]`)
		}, "batch_too_large"},
		{"ingest batch not json", func() answer { return ingest(`[{"id":`) }, "InvalidRequestContentException"},
		{"ingest string", func() answer { return ingest(`"hello"`) }, "invalid_envelope"},
		{"ingest wrong types", func() answer { return ingest(envelopeWith("tenantId", "7")) }, "invalid_envelope"},
		{"ingest huge string", func() answer { return ingest(envelopeWith("id", `"`+strings.Repeat("a", 100000)+`"`)) }, "invalid_id"},
		{"ingest huge array", func() answer { return ingest(envelopeWith("payload", `{"a":[`+strings.Repeat("1,", 700000)+`1]}`)) }, "payload_too_large"},
		{"ingest deep nesting", func() answer { return ingest(envelopeWith("payload", `{"a":`+deep+`}`)) }, "invalid_payload"},
		{"ingest duplicate id", func() answer {
			return ingest(`{"id":"a","id":"b","tenantId":"acme","type":"inquiry.created","source":"storefront","timestamp":"2026-12-02T11:00:00Z","payload":{}}`)
		}, "invalid_envelope"},
		{"ingest invalid utf-8", func() answer { return ingest(envelopeWith("payload", "{\"k\":\"\xff\"}")) }, ""},
		{"ingest NUL escape in tenant", func() answer { return ingest(envelopeWith("tenantId", `"ac\u0000me"`)) }, "invalid_tenant"},
		{"ingest unknown field", func() answer { return ingest(envelopeWith("extra", `1`)) }, "invalid_envelope"},
		{"ingest path traversal id", func() answer { return ingest(envelopeWith("id", `"../../etc"`)) }, "invalid_id"},
		{"ingest unknown source", func() answer {
			return ingest(`{"id":"evt_x","tenantId":"acme","type":"inquiry.created","source":"mallory","timestamp":"2026-12-02T11:00:00Z","payload":{}}`)
		}, "unknown_source"},
		{"ingest payloadRef from a producer", func() answer {
			return ingest(`{"id":"evt_x","tenantId":"acme","type":"inquiry.created","source":"storefront","timestamp":"2026-12-02T11:00:00Z","payloadRef":{"bucket":"b","key":"../x","size":1,"sha256":"x"}}`)
		}, "invalid_envelope"},

		// Replay through the Lambda Invoke API.
		{"replay not json", func() answer { return replayCall(`{"action":`) }, "InvalidRequestContentException"},
		{"replay non-object", func() answer { return replayCall(`[1]`) }, "invalid_request"},
		{"replay unknown action", func() answer { return replayCall(`{"action":"drop-tables"}`) }, "invalid_request"},
		{"replay wrong types", func() answer { return replayCall(`{"action":"list","query":{"limit":"ten"}}`) }, "invalid_request"},
		{"replay duplicate keys", func() answer { return replayCall(`{"action":"get","action":"replay"}`) }, "invalid_request"},
		{"replay unknown field", func() answer { return replayCall(`{"action":"list","sql":"drop"}`) }, "invalid_request"},
		{"replay malformed incident id", func() answer { return replayCall(`{"action":"replay-one","incidentId":"../../inc"}`) }, "invalid_request"},
		{"replay huge id list", func() answer {
			ids := strings.TrimSuffix(strings.Repeat(`"`+incidentID+`",`, 1001), ",")
			return replayCall(`{"action":"replay","request":{"incidentIds":[` + ids + `]}}`)
		}, "invalid_request"},
		{"replay huge note", func() answer {
			return replayCall(`{"action":"replay","request":{"tenantId":"acme","note":"` + strings.Repeat("n", 5000) + `"}}`)
		}, "invalid_request"},
		{"replay empty filter", func() answer { return replayCall(`{"action":"replay","request":{}}`) }, "invalid_request"},
		{"replay unknown incident", func() answer { return replayCall(`{"action":"get","incidentId":"` + incidentID + `"}`) }, "not_found"},
		{"replay cross-tenant cursor", func() answer {
			forged, err := pagecursor.Encode(map[string][2]string{"tenantId": {"S", "globex"}, "tenantSk": {"S", "9999"}, "pk": {"S", "EVENT#globex/x"}, "sk": {"S", "LEDGER"}})
			require.NoError(t, err)
			return replayCall(`{"action":"events","query":{"tenantId":"acme","cursor":"` + forged + `"}}`)
		}, "invalid_request"},
		{"replay cross-tenant event", func() answer {
			return replayCall(`{"action":"event","eventId":"` + ev.ID + `","tenantId":"globex"}`)
		}, "not_found"},

		// The cache purge API through the Lambda Invoke API.
		{"purge not json", func() answer { return purgeCall(`{"op":`) }, "InvalidRequestContentException"},
		{"purge non-object", func() answer { return purgeCall(`[1]`) }, "invalid_request"},
		{"purge unknown op", func() answer { return purgeCall(`{"op":"purgeEverything"}`) }, "invalid_request"},
		{"purge duplicate keys", func() answer { return purgeCall(`{"op":"purgeTags","op":"getPurgeStatus"}`) }, "invalid_request"},
		{"purge cross-tenant tag", func() answer {
			return purgeCall(`{"op":"purgeTags","tenantId":"acme","tags":["tenant:acme","tenant:globex"]}`)
		}, "cross_tenant_tag"},
		{"purge upper-case tenant", func() answer { return purgeCall(`{"op":"purgeTags","tenantId":"ACME","tags":["tenant:acme"]}`) }, "invalid_tenant"},
		{"purge 501 tags", func() answer {
			tags := make([]string, 501)
			for i := range tags {
				tags[i] = fmt.Sprintf(`"tenant:acme:page:/p%d"`, i)
			}
			return purgeCall(`{"op":"purgeTags","tenantId":"acme","tags":[` + strings.Join(tags, ",") + `]}`)
		}, "too_many_tags"},
		{"purge tag with a comma", func() answer {
			return purgeCall(`{"op":"purgeTags","tenantId":"acme","tags":["tenant:acme:page:/a,b"]}`)
		}, "invalid_tag"},
		{"purge tag not a string", func() answer { return purgeCall(`{"op":"purgeTags","tenantId":"acme","tags":[{"x":1}]}`) }, "invalid_tag"},
		{"purge no tags", func() answer { return purgeCall(`{"op":"purgeTags","tenantId":"acme","tags":[]}`) }, "empty_tags"},
		{"purge path traversal job", func() answer { return purgeCall(`{"op":"getPurgeStatus","jobId":"../../etc"}`) }, "invalid_request"},
		{"purge deep nesting", func() answer { return purgeCall(`{"op":"purgeTags","tenantId":"acme","tags":` + deep + `}`) }, "invalid_request"},

		// The admin API.
		{"admin purge no key", func() answer {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, st.URL()+"/admin/purge/jobs/pj_00000000000000000000000000000000", nil)
			return httpAnswer(t, req)
		}, "unauthorized"},
		{"admin path traversal event", func() answer { return admin(http.MethodGet, "/admin/events/..%2F..%2Fetc%2Fpasswd", "") }, "invalid_id"},
		{"admin path traversal incident", func() answer { return admin(http.MethodGet, "/admin/incidents/..%2Finc", "") }, "invalid_id"},
		{"admin cross-tenant event", func() answer { return admin(http.MethodGet, "/admin/events/"+ev.ID+"?tenant=globex", "") }, "event_not_found"},
		{"admin bad tenant", func() answer { return admin(http.MethodGet, "/admin/events/"+ev.ID+"?tenant=ACME", "") }, "invalid_tenant"},
		{"admin bad filter", func() answer { return admin(http.MethodGet, "/admin/incidents?status=gone&since=yesterday", "") }, "invalid_filter"},
		{"admin huge limit", func() answer { return admin(http.MethodGet, "/admin/incidents?limit=99999999999999999999", "") }, "invalid_filter"},
		{"admin forged cursor", func() answer { return admin(http.MethodGet, "/admin/incidents?cursor=not-a-cursor", "") }, "invalid_cursor"},
		{"admin body not json", func() answer { return admin(http.MethodPost, "/admin/incidents/"+incidentID+"/replay", `{"force":`) }, "invalid_body"},
		{"admin body array", func() answer { return admin(http.MethodPost, "/admin/incidents/"+incidentID+"/replay", `[true]`) }, "invalid_body"},
		{"admin body duplicate keys", func() answer {
			return admin(http.MethodPost, "/admin/incidents/"+incidentID+"/transition", `{"status":"triaged","status":"ignored"}`)
		}, "invalid_body"},
		{"admin body unknown field", func() answer {
			return admin(http.MethodPost, "/admin/incidents/"+incidentID+"/replay", `{"drop":true}`)
		}, "invalid_body"},
		{"admin body invalid utf-8", func() answer {
			return admin(http.MethodPost, "/admin/incidents/"+incidentID+"/replay", "{\"note\":\"\xff\"}")
		}, "unsupported_media_type"},
		{"admin body NUL", func() answer {
			return admin(http.MethodPost, "/admin/incidents/"+incidentID+"/replay", "{\"note\":\"a\x00\"}")
		}, "invalid_body"},
		{"admin body oversize", func() answer {
			return admin(http.MethodPost, "/admin/incidents/"+incidentID+"/replay", `{"note":"`+huge+`"}`)
		}, "invalid_body"},
		{"admin file import of another tenant's file", func() answer {
			return admin(http.MethodPost, "/admin/jobs", `{"kind":"file-import","tenantId":"acme","args":{"key":"imports/globex/a.ndjson"}}`)
		}, "invalid_args"},
		{"admin file import outside imports/", func() answer {
			return admin(http.MethodPost, "/admin/jobs", `{"kind":"file-import","tenantId":"acme","args":{"key":"payloads/acme/x"}}`)
		}, "invalid_args"},
		{"admin file import of an error report", func() answer {
			return admin(http.MethodPost, "/admin/jobs", `{"kind":"file-import","tenantId":"acme","args":{"key":"imports/acme/a.ndjson.errors.ndjson"}}`)
		}, "invalid_args"},
		{"admin file import unknown arg", func() answer {
			return admin(http.MethodPost, "/admin/jobs", `{"kind":"file-import","tenantId":"acme","args":{"key":"imports/acme/a.ndjson","bucket":"elsewhere"}}`)
		}, "invalid_args"},
		{"admin file import bad version id", func() answer {
			return admin(http.MethodPost, "/admin/jobs", `{"kind":"file-import","tenantId":"acme","args":{"key":"imports/acme/a.ndjson","versionId":"a b"}}`)
		}, "invalid_args"},
		{"admin unknown incident", func() answer { return admin(http.MethodPost, "/admin/incidents/"+incidentID+"/replay", `{}`) }, ""},
		// Retention policies (issue 23 §2).
		{"admin retention events below the dedupe window", func() answer {
			return admin(http.MethodPut, "/admin/tenants/acme/retention", `{"eventsDays":3}`)
		}, "invalid_policy"},
		{"admin retention archives beyond ten years", func() answer {
			return admin(http.MethodPut, "/admin/tenants/acme/retention", `{"archivesDays":99999}`)
		}, "invalid_policy"},
		{"admin retention negative exports", func() answer {
			return admin(http.MethodPut, "/admin/tenants/acme/retention", `{"exportsDays":-1}`)
		}, "invalid_policy"},
		{"admin retention not a number", func() answer {
			return admin(http.MethodPut, "/admin/tenants/acme/retention", `{"incidentsDays":"90"}`)
		}, "invalid_body"},
		{"admin retention unknown field", func() answer {
			return admin(http.MethodPut, "/admin/tenants/acme/retention", `{"payloadDays":30}`)
		}, "invalid_body"},
		{"admin retention bad tenant", func() answer {
			return admin(http.MethodPut, "/admin/tenants/ACME/retention", `{"exportsDays":30}`)
		}, "invalid_tenant"},
		{"admin retention get bad tenant", func() answer { return admin(http.MethodGet, "/admin/tenants/..%2Facme/retention", "") }, "invalid_tenant"},
		{"admin retention stale version", func() answer {
			return admin(http.MethodPut, "/admin/tenants/acme/retention", `{"exportsDays":30,"ifVersion":7}`)
		}, "version_conflict"},
		{"admin retention delete", func() answer { return admin(http.MethodDelete, "/admin/tenants/acme/retention", "") }, "method_not_allowed"},
		{"replay retention set out of range", func() answer {
			return replayCall(`{"action":"retention.set","tenantId":"acme","incidentsDays":5000}`)
		}, "invalid_policy"},
		{"admin no key", func() answer {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, st.URL()+"/admin/incidents", nil)
			return httpAnswer(t, req)
		}, "unauthorized"},
	}
	// Every other provider's route (webhook/providers), signed its way
	// with its local secret where the case is about the body.
	for _, d := range providers.All() {
		if d.Name == stripe.Source {
			continue
		}
		post := func(body string, signed bool) answer {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, st.URL()+devstack.WebhookPath(d), strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			if signed {
				for k, v := range signedLocally(d, []byte(body)) {
					req.Header.Set(k, v)
				}
			}
			return httpAnswer(t, req)
		}
		cases = append(cases, []struct {
			name string
			send func() answer
			code string
		}{
			{d.Name + " unsigned", func() answer { return post(`{"id":1}`, false) }, "signature_missing"},
			{d.Name + " not json", func() answer { return post(`{"id": `, true) }, ""},
			{d.Name + " array", func() answer { return post(`[{"id":1}]`, true) }, ""},
			{d.Name + " oversize body", func() answer { return post(`{"pad":"`+huge+`"}`, true) }, "payload_too_large"},
			{d.Name + " invalid utf-8", func() answer { return post("{\"x\":\"\xff\xfe\"}", true) }, ""},
		}...)
	}

	for _, tc := range cases {
		calls.Reset()
		got := tc.send()
		require.GreaterOrEqual(t, got.status, 400, tc.name)
		require.Less(t, got.status, 500, tc.name)
		require.NotEmpty(t, got.code, "%s: a machine-readable code", tc.name)
		if tc.code != "" {
			require.Equal(t, tc.code, got.code, tc.name)
		}
		snap := calls.Snapshot()
		for _, op := range writeOps {
			require.Zero(t, snap[op], "%s: %s called", tc.name, op)
		}
	}
	require.Equal(t, before, snapshot(t, st), "nothing written")
}

func httpAnswer(t *testing.T, req *http.Request) (a struct {
	status int
	code   string
}) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	a.status = resp.StatusCode
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && len(e.Error) > 0 {
		var coded struct {
			Code string `json:"code"`
		}
		if json.Unmarshal(e.Error, &coded) == nil && coded.Code != "" {
			a.code = coded.Code
		} else {
			var plain string
			_ = json.Unmarshal(e.Error, &plain)
			a.code = plain
		}
	}
	if a.code == "" {
		var outcome struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(body, &outcome)
		a.code = outcome.Reason
	}
	require.True(t, json.Valid(body) || bytes.Contains(body, []byte("Moved")), "an answer in JSON: %s", body)
	return a
}

// serviceCode is the error code of a Lambda service error.
func serviceCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return fmt.Sprint(err)
}
