package webhook_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/kit/canonjson"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
	"github.com/siteswarm/eventplatform/internal/secret"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	"github.com/siteswarm/eventplatform/internal/wire/ingestfn"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
	"github.com/siteswarm/eventplatform/internal/wire/wiretest"
)

const testSecret = "whsec_handler_test_0123456789"

// tenantMap is the tenant mapping of the default bundle: the Connect
// account of the checkout sample belongs to initech; no default tenant.
const tenantMap = `{"accounts":{"acct_1PqRsTBq2Lw7Xa1k":"initech"}}`

type bundle struct {
	env      *awslocaltest.Env
	h        *webhook.Handler
	fns      *lambdalocal.Functions
	svc      *ingest.Service
	events   *dynamo.Events
	ingest   ingestfn.Config
	settings map[string]string
	metrics  *testkit.Buffer
	// provider is the handler's provider, configured alike (benchmarks
	// canonicalize outside the handler).
	provider webhook.Provider
}

func (b *bundle) metricLines() string { return b.metrics.String() }

type option func(settings map[string]string)

func withSetting(k, v string) option { return func(m map[string]string) { m[k] = v } }

// setup builds the deployed graph on the emulators: the webhook handler
// from its env config (wire/webhookfn), invoking the real ingest service
// through the local Lambda Invoke endpoint with the SDK client.
func setup(t testing.TB, opts ...option) *bundle {
	t.Helper()
	env := awslocaltest.NewEnv(t)
	icfg := wiretest.IngestConfig(t, env, wiretest.Opts{})
	svc := wiretest.Ingest(t, env, wiretest.Opts{})
	fns := lambdalocal.NewFunctions()
	fns.Register(ingestfn.Name, svc.Handle, lambdalocal.FunctionTimeout(ingestfn.FunctionTimeout))
	env.ServeFunctions(fns)

	settings := map[string]string{
		webhookfn.EnvIngestFunction: ingestfn.Name,
		webhookfn.EnvSecret:         testSecret,
		webhookfn.EnvTenantMap:      tenantMap,
	}
	for _, o := range opts {
		o(settings)
	}
	metrics := &testkit.Buffer{}
	h := wiretest.StripeWebhook(t, env, wiretest.Opts{Settings: settings, Metrics: &metric.Emitter{W: metrics}})
	var tenants webhook.TenantMap
	require.NoError(t, json.Unmarshal([]byte(settings[webhookfn.EnvTenantMap]), &tenants))
	return &bundle{
		env: env, h: h, fns: fns, svc: svc, ingest: icfg, settings: settings, metrics: metrics,
		provider: stripe.New(secret.List{testSecret}, tenants, nil),
		events:   env.Events(),
	}
}

func sample(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", "stripe", name))
	require.NoError(t, err)
	return b
}

func request(body []byte, header string) events.APIGatewayV2HTTPRequest {
	req := events.APIGatewayV2HTTPRequest{
		Version:  "2.0",
		RouteKey: "ANY /webhook/stripe",
		RawPath:  "/webhook/stripe",
		Headers:  map[string]string{"content-type": "application/json; charset=utf-8", "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)"},
		Body:     string(body),
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RequestID: uuid.NewString(),
			HTTP:      events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost, Path: "/webhook/stripe", SourceIP: "3.18.12.63"},
		},
	}
	if header != "" {
		req.Headers["stripe-signature"] = header
	}
	return req
}

func signed(body []byte) events.APIGatewayV2HTTPRequest {
	return request(body, stripe.Sign(body, time.Now(), testSecret))
}

type answer struct {
	Status        envelope.Status `json:"status"`
	EventID       string          `json:"eventId"`
	Topics        []string        `json:"topics"`
	PendingTopics []string        `json:"pendingTopics"`
	Error         *envelope.Error `json:"error"`
}

func (b *bundle) do(t *testing.T, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, answer) {
	t.Helper()
	resp, err := b.h.Handle(context.Background(), req)
	require.NoError(t, err, "the handler answers, it never fails the invocation")
	require.Equal(t, "application/json", resp.Headers["Content-Type"])
	require.Equal(t, req.RequestContext.RequestID, resp.Headers["X-Request-Id"])
	var a answer
	require.NoError(t, json.Unmarshal([]byte(resp.Body), &a), resp.Body)
	if resp.StatusCode >= 400 {
		require.NotNil(t, a.Error, "every refusal has {\"error\":{\"code\",\"message\"}}: %s", resp.Body)
		require.NotEmpty(t, a.Error.Code)
		require.NotEmpty(t, a.Error.Message)
	}
	return resp, a
}

func (b *bundle) invokes() int { return b.env.Calls.Count("Lambda", "Invoke") }

// messages receives the topic's messages for one event id (they stay in
// flight, so a later call only sees new ones).
func (b *bundle) messages(t *testing.T, topic, eventID string) []envelope.Event {
	t.Helper()
	var out []envelope.Event
	for _, m := range b.env.ReceiveAll(context.Background(), b.env.Queue(topic).URL, 10, 300*time.Millisecond) {
		ev, rerr := envelope.ParseMessage([]byte(*m.Body))
		require.Nil(t, rerr)
		if ev.ID == eventID {
			require.Equal(t, eventID, *m.MessageAttributes["eventId"].StringValue)
			require.Equal(t, ev.TenantID, *m.MessageAttributes["tenantId"].StringValue)
			out = append(out, ev)
		}
	}
	return out
}

func (b *bundle) depth(t *testing.T, topic string) int {
	t.Helper()
	visible, inflight := b.env.QueueDepth(context.Background(), b.env.Queue(topic).URL)
	return visible + inflight
}

// TestSamplesRoundTrip posts every sample under events/stripe as Stripe
// would and follows it to its queue: once, with the canonical envelope and
// the Stripe event as its payload; a redelivery is acknowledged without a
// second message; an event type without a route is acknowledged and
// stores nothing.
func TestSamplesRoundTrip(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file, id, tenant, subject string
		topic                     string // "" = unrouted
	}{
		{"invoice.paid.json", "evt_1PzB7sLkdIwHu7ixQm3nT0aX", "acme", "in_1PzB7pLkdIwHu7ixb1Zc2R9Q", topology.Billing},
		{"customer.subscription.updated.json", "evt_1PzC2aLkdIwHu7ixK8pW3yRt", "globex", "sub_1PbXyZLkdIwHu7ixM4nB7vCq", topology.Billing},
		{"checkout.session.completed.json", "evt_1PzD9fBq2Lw7Xa1kR5tY8uIo", "initech", "cs_test_a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuVwXyZ", topology.Billing},
		{"customer.created.json", "evt_1PzE4kLkdIwHu7ixN2bV6cXz", "umbrella", "cus_QtU1pQ5sOn7vWy", ""},
		// The samples the payload dictionary is trained on (internal/kit/zdict).
		{"charge.dispute.created.json", "evt_1QxulcLkdIwHu7ixKW0hT8QT", "globex", "dp_1QbyGsLkdIwHu7ixOX7wEa4o", ""},
		{"charge.refunded.json", "evt_1QPJcdLkdIwHu7ix826G6jyb", "umbrella", "ch_1QTCvnLkdIwHu7ix0MTK2bql", ""},
		{"charge.succeeded.json", "evt_1QTQcvLkdIwHu7ixnaeS3U0K", "globex", "ch_1QQ9rFLkdIwHu7ixddWi0yh0", ""},
		{"checkout.session.expired.json", "evt_1QPOq9LkdIwHu7ixfNXKi3bu", "acme", "cs_test_kDzq3CRyT80LIR9isWIdKLsDwLrJapnf6i9BTOgX4iFdrvaJ5UJtgCeADG", topology.Billing},
		{"customer.deleted.json", "evt_1QE6GyLkdIwHu7ixyEl3vuYC", "umbrella", "cus_LDtX739nidGrni", ""},
		{"customer.subscription.created.json", "evt_1QxHRSLkdIwHu7ixkdoZZBjt", "umbrella", "sub_1QTQwqLkdIwHu7ixOKUbgjVU", topology.Billing},
		{"customer.subscription.deleted.json", "evt_1Q86eqLkdIwHu7ixqVVWUmeQ", "globex", "sub_1Q24eVLkdIwHu7ixACwOoHq2", topology.Billing},
		{"customer.subscription.trial_will_end.json", "evt_1QJmjtLkdIwHu7ixJuJIz0zq", "acme", "sub_1QF2ghLkdIwHu7ixmUfUqVXL", topology.Billing},
		{"customer.updated.json", "evt_1QrGX3LkdIwHu7ix0bwrclUk", "initech", "cus_H3mPA6MmmVsUu6", ""},
		{"invoice.created.json", "evt_1Q3m4fLkdIwHu7ixZ6hQ2ak7", "acme", "in_1QvgoELkdIwHu7ixuVFjiSSd", topology.Billing},
		{"invoice.finalized.json", "evt_1QYzJhLkdIwHu7ixzMYA9GY4", "acme", "in_1QpgseLkdIwHu7ixz4ZbMS1R", topology.Billing},
		{"invoice.payment_failed.json", "evt_1Ql5BiLkdIwHu7ix9VMjDuHK", "globex", "in_1Qp6LCLkdIwHu7ixpi71Dc3w", topology.Billing},
		{"invoice.voided.json", "evt_1QA2mpLkdIwHu7ixe8bWzx5x", "umbrella", "in_1QnHHCLkdIwHu7ixIhWmppTB", topology.Billing},
		{"payment_intent.payment_failed.json", "evt_1QrnLKLkdIwHu7ixPKjMgwVZ", "acme", "pi_1Q3vlBLkdIwHu7ixWm3hK9hH", ""},
		{"payment_intent.succeeded.json", "evt_1Q25VtLkdIwHu7ixJT9ePUt5", "globex", "pi_1QdYmoLkdIwHu7ixlD7sqjUw", ""},
		{"payment_method.attached.json", "evt_1QdYEXLkdIwHu7ixZ9E2AXkq", "initech", "pm_1QyASxLkdIwHu7ixxGyIbMR9", ""},
		{"payout.paid.json", "evt_1QaHXjLkdIwHu7ix3HI0l34m", "acme", "po_1Qm3zcLkdIwHu7ixeB3Vyfmu", ""},
		{"price.created.json", "evt_1Qzk6ULkdIwHu7ix8OQnrRAr", "umbrella", "price_1QsrRHLkdIwHu7ixtDh3IP8U", ""},
		{"product.created.json", "evt_1QyVjFLkdIwHu7ix2MvRLFdL", "umbrella", "prod_xt9fQxUtPu4zv2", ""},
		{"refund.created.json", "evt_1QTZPWLkdIwHu7ixFFALBPgP", "umbrella", "re_1QUoIBLkdIwHu7ixBfDxBl8G", ""},
		{"setup_intent.succeeded.json", "evt_1Q9HQHLkdIwHu7ixPbOpNRNd", "acme", "seti_1QE6omLkdIwHu7ixInSzziDj", ""},
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "events", "stripe", "*.json"))
	require.NoError(t, err)
	require.Len(t, files, len(cases), "every sample has a round-trip case")
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			body := sample(t, tc.file)
			var stripeEv struct {
				Type    string `json:"type"`
				Created int64  `json:"created"`
			}
			require.NoError(t, json.Unmarshal(body, &stripeEv))

			resp, a := b.do(t, signed(body))
			require.Equal(t, http.StatusOK, resp.StatusCode, resp.Body)
			require.Equal(t, tc.id, a.EventID)
			require.Equal(t, tc.id, resp.Headers["X-Event-Id"])

			if tc.topic == "" {
				require.Equal(t, envelope.StatusUnrouted, a.Status)
				_, _, err := b.events.Load(context.Background(), tc.id)
				require.ErrorIs(t, err, ledger.ErrNotFound, "an unrouted event stores nothing")
				for _, tp := range b.env.Topology.TopicNames() {
					require.Zero(t, b.depth(t, tp), tp)
				}
				return
			}
			require.Equal(t, envelope.StatusEnqueued, a.Status)
			require.Equal(t, []string{tc.topic}, a.Topics)
			msgs := b.messages(t, tc.topic, tc.id)
			require.Len(t, msgs, 1)
			ev := msgs[0]
			require.Equal(t, tc.tenant, ev.TenantID)
			require.Equal(t, "stripe."+stripeEv.Type, ev.Type)
			require.Equal(t, "stripe", ev.Source)
			require.Equal(t, tc.subject, ev.Subject)
			require.Equal(t, time.Unix(stripeEv.Created, 0).UTC(), ev.Timestamp)
			require.JSONEq(t, string(body), string(ev.Payload), "the payload is the Stripe event")

			// Stripe redelivers (a timeout on its side, a manual resend).
			resp, a = b.do(t, signed(body))
			require.Equal(t, http.StatusOK, resp.StatusCode, resp.Body)
			require.Equal(t, envelope.StatusDuplicate, a.Status)
			require.Empty(t, b.messages(t, tc.topic, tc.id), "no second message")
			require.Equal(t, 1, b.depth(t, tc.topic))
		})
	}
}

func TestBase64Body(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := sample(t, "invoice.paid.json")
	req := signed(body)
	req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	resp, a := b.do(t, req)
	require.Equal(t, http.StatusOK, resp.StatusCode, resp.Body)
	require.Equal(t, envelope.StatusEnqueued, a.Status)
	require.Len(t, b.messages(t, topology.Billing, "evt_1PzB7sLkdIwHu7ixQm3nT0aX"), 1)

	req = signed(body)
	req.Body, req.IsBase64Encoded = "not base64!", true
	resp, a = b.do(t, req)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, webhook.CodeInvalidBody, a.Error.Code)
}

func TestBodyOverOneMiBIsRefusedBeforeVerification(t *testing.T) {
	t.Parallel()
	b := setup(t)
	big := make([]byte, webhook.MaxBodyBytes+1)
	for i := range big {
		big[i] = 'a'
	}
	plain := signed(big)
	b64 := signed(big)
	b64.Body, b64.IsBase64Encoded = base64.StdEncoding.EncodeToString(big), true
	unsigned := request(big, "")
	for name, req := range map[string]events.APIGatewayV2HTTPRequest{"signed": plain, "base64": b64, "unsigned (413, not 401)": unsigned} {
		resp, a := b.do(t, req)
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, name)
		require.Equal(t, webhook.CodeBodyTooLarge, a.Error.Code, name)
	}

	// Exactly 1 MiB passes the size check and reaches verification and
	// parsing (it is not a Stripe event).
	limit := big[:webhook.MaxBodyBytes]
	resp, a := b.do(t, signed(limit))
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, webhook.CodeInvalidEvent, a.Error.Code)
	limit64 := signed(limit)
	limit64.Body, limit64.IsBase64Encoded = base64.StdEncoding.EncodeToString(limit), true
	resp, a = b.do(t, limit64)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, webhook.CodeInvalidEvent, a.Error.Code)
	resp, _ = b.do(t, request(limit, ""))
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Zero(t, b.invokes(), "none of these reached ingest")
}

func TestNonPostIs405(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodHead} {
		req := signed(sample(t, "invoice.paid.json"))
		req.RequestContext.HTTP.Method = m
		resp, a := b.do(t, req)
		require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, m)
		require.Equal(t, http.MethodPost, resp.Headers["Allow"])
		require.Equal(t, webhook.CodeMethodNotAllowed, a.Error.Code)
	}
	require.Zero(t, b.invokes())
}

func TestBadSignatureIs401AndNeverReachesIngest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := sample(t, "invoice.paid.json")
	cases := map[string]struct {
		req  events.APIGatewayV2HTTPRequest
		code envelope.Code
	}{
		"missing":      {request(body, ""), webhook.CodeSignatureMissing},
		"malformed":    {request(body, "t=1,sig"), webhook.CodeSignatureMalformed},
		"wrong secret": {request(body, stripe.Sign(body, time.Now(), "whsec_attacker")), webhook.CodeSignatureMismatch},
		"replayed":     {request(body, stripe.Sign(body, time.Now().Add(-10*time.Minute), testSecret)), webhook.CodeSignatureExpired},
		"tampered":     {request([]byte(strings.Replace(string(body), `"amount_paid": 4900`, `"amount_paid": 1`, 1)), stripe.Sign(body, time.Now(), testSecret)), webhook.CodeSignatureMismatch},
	}
	for name, tc := range cases {
		resp, a := b.do(t, tc.req)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, name)
		require.Equal(t, tc.code, a.Error.Code, name)
		require.NotContains(t, resp.Body, testSecret)
	}
	require.Zero(t, b.invokes())
}

func TestUnresolvedTenantIs422(t *testing.T) {
	t.Parallel()
	b := setup(t) // no default tenant
	body := []byte(`{"id":"evt_no_tenant","object":"event","type":"invoice.paid","created":1764676800,"data":{"object":{"id":"in_1","object":"invoice","metadata":{}}}}`)
	resp, a := b.do(t, signed(body))
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, resp.Body)
	require.Equal(t, webhook.CodeTenantUnresolved, a.Error.Code)
	require.Equal(t, "evt_no_tenant", a.EventID)
	require.Equal(t, "evt_no_tenant", resp.Headers["X-Event-Id"])
	require.Zero(t, b.invokes(), "nothing reaches ingest, so Stripe retries")

	// The operator adds a default tenant; Stripe's retry goes through.
	fixed := setup(t, withSetting(webhookfn.EnvTenantMap, `{"default":"acme"}`))
	resp, a = fixed.do(t, signed(body))
	require.Equal(t, http.StatusOK, resp.StatusCode, resp.Body)
	require.Equal(t, envelope.StatusEnqueued, a.Status)
	require.Equal(t, "acme", fixed.messages(t, topology.Billing, "evt_no_tenant")[0].TenantID)
}

// Tenant spoofing through Stripe Connect, reproduced: a connected account
// the tenant map does not name sets metadata.tenant_id to another tenant.
// It is refused with 422 unknown_account (Stripe retries while an operator
// maps the account), counted, and never reaches ingest; once mapped, the
// retry lands in the mapped tenant, whatever the metadata says.
func TestConnectAccountCannotPickItsTenant(t *testing.T) {
	t.Parallel()
	b := setup(t, withSetting(webhookfn.EnvTenantMap, `{"default":"globex"}`))
	body := []byte(`{"id":"evt_spoof","object":"event","type":"invoice.paid","created":1764676800,"account":"acct_attacker","data":{"object":{"id":"in_1","object":"invoice","metadata":{"tenant_id":"acme"}}}}`)
	resp, a := b.do(t, signed(body))
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, resp.Body)
	require.Equal(t, webhook.CodeUnknownAccount, a.Error.Code)
	require.Contains(t, a.Error.Message, "acct_attacker")
	require.Zero(t, b.invokes(), "nothing reaches ingest")
	require.Contains(t, b.metricLines(), `"Code":"unknown_account"`, "counted")

	mapped := setup(t, withSetting(webhookfn.EnvTenantMap, `{"accounts":{"acct_attacker":"initech"},"default":"globex"}`))
	resp, a = mapped.do(t, signed(body))
	require.Equal(t, http.StatusOK, resp.StatusCode, resp.Body)
	require.Equal(t, envelope.StatusEnqueued, a.Status)
	require.Equal(t, "initech", mapped.messages(t, topology.Billing, "evt_spoof")[0].TenantID)
}

// TestAcceptedIs503UntilTheRetryDrivesThePendingTopic: the event is stored
// but its billing send failed; Stripe gets a 503 with Retry-After, and its
// retry re-drives just that topic (docs/architecture.md §5, guarantee 3).
func TestAcceptedIs503UntilTheRetryDrivesThePendingTopic(t *testing.T) {
	t.Parallel()
	b := setup(t, withSetting(webhookfn.EnvRetryAfter, "90s"))
	body := sample(t, "invoice.paid.json")
	b.env.Faults.Add(awslocal.Fault{Service: "SQS", Operation: "SendMessage", Resource: b.env.Queue(topology.Billing).URL, Times: 1})

	resp, a := b.do(t, signed(body))
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, resp.Body)
	require.Equal(t, "90", resp.Headers["Retry-After"])
	require.Equal(t, envelope.StatusAccepted, a.Status)
	require.Equal(t, []string{topology.Billing}, a.PendingTopics)
	require.Zero(t, b.depth(t, topology.Billing))

	resp, a = b.do(t, signed(body))
	require.Equal(t, http.StatusOK, resp.StatusCode, resp.Body)
	require.Equal(t, envelope.StatusDuplicate, a.Status)
	require.Empty(t, a.PendingTopics)
	require.Len(t, b.messages(t, topology.Billing, "evt_1PzB7sLkdIwHu7ixQm3nT0aX"), 1)
}

func TestIngestRejectionsAre400And409(t *testing.T) {
	t.Parallel()
	b := setup(t, withSetting(webhookfn.EnvTenantMap, `{"default":"acme"}`))

	// Stripe types are lowercase; this one is not a valid platform type.
	bad := []byte(`{"id":"evt_bad_type","object":"event","type":"invoice.Paid","created":1764676800,"data":{"object":{"id":"in_1","object":"invoice"}}}`)
	resp, a := b.do(t, signed(bad))
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, resp.Body)
	require.Equal(t, envelope.StatusRejected, a.Status)
	require.Equal(t, envelope.CodeInvalidType, a.Error.Code, "ingest's own code")

	first := []byte(`{"id":"evt_conflict","object":"event","type":"invoice.paid","created":1764676800,"data":{"object":{"id":"in_1","object":"invoice","amount_paid":100}}}`)
	again := []byte(`{"id":"evt_conflict","object":"event","type":"invoice.paid","created":1764676800,"data":{"object":{"id":"in_1","object":"invoice","amount_paid":999}}}`)
	resp, _ = b.do(t, signed(first))
	require.Equal(t, http.StatusOK, resp.StatusCode, resp.Body)
	resp, a = b.do(t, signed(again))
	require.Equal(t, http.StatusConflict, resp.StatusCode, resp.Body)
	require.Equal(t, envelope.CodeIdempotencyConflict, a.Error.Code)
	require.Len(t, b.messages(t, topology.Billing, "evt_conflict"), 1)
}

func TestIngestFailures(t *testing.T) {
	t.Parallel()
	body := sample(t, "customer.subscription.updated.json")
	const id = "evt_1PzC2aLkdIwHu7ixK8pW3yRt"

	t.Run("function error is 502, the retry succeeds", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "TransactWriteItems", Times: 1})
		resp, a := b.do(t, signed(body))
		require.Equal(t, http.StatusBadGateway, resp.StatusCode, resp.Body)
		require.Equal(t, webhook.CodeIngestFailed, a.Error.Code)
		require.Equal(t, id, a.EventID)
		require.NotContains(t, resp.Body, "awslocal", "internal error details stay in the logs")
		resp, a = b.do(t, signed(body))
		require.Equal(t, http.StatusOK, resp.StatusCode, resp.Body)
		require.Equal(t, envelope.StatusEnqueued, a.Status)
	})
	t.Run("throttled invoke is 503", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.env.Faults.Add(awslocal.Fault{Service: "Lambda", Operation: "Invoke", Times: 1, Err: awslocal.Throttled()})
		resp, a := b.do(t, signed(body))
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, resp.Body)
		require.Equal(t, webhook.CodeIngestUnavailable, a.Error.Code)
		require.Equal(t, "60", resp.Headers["Retry-After"])
	})
	t.Run("ingest timing out is 503", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		b.fns.Register("ingest", func(ctx context.Context, _ json.RawMessage) (envelope.Result, error) {
			<-release // stuck past its deadline, as a frozen dependency would leave it
			return envelope.Result{}, ctx.Err()
		}, lambdalocal.FunctionTimeout(50*time.Millisecond))
		resp, a := b.do(t, signed(body))
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, resp.Body)
		require.Equal(t, webhook.CodeIngestUnavailable, a.Error.Code)
	})
	t.Run("ingest function missing is 502", func(t *testing.T) {
		t.Parallel()
		b := setup(t, withSetting(webhookfn.EnvIngestFunction, "arn:aws:lambda:us-east-1:000000000000:function:nope"))
		resp, a := b.do(t, signed(body))
		require.Equal(t, http.StatusBadGateway, resp.StatusCode, resp.Body)
		require.Equal(t, webhook.CodeIngestFailed, a.Error.Code)
	})
}

// TestConcurrentDeliveriesStoreOnce: Stripe can deliver the same event
// several times at once (retries racing a slow first attempt).
func TestConcurrentDeliveriesStoreOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := sample(t, "invoice.paid.json")
	const n = 6
	statuses := make(chan envelope.Status, n)
	codes := make(chan int, n)
	done := make(chan struct{})
	for range n {
		go func() {
			defer func() { done <- struct{}{} }()
			resp, err := b.h.Handle(context.Background(), signed(body))
			if err != nil {
				t.Errorf("handle: %v", err)
				return
			}
			var a answer
			_ = json.Unmarshal([]byte(resp.Body), &a)
			statuses <- a.Status
			codes <- resp.StatusCode
		}()
	}
	for range n {
		<-done
	}
	close(statuses)
	close(codes)
	count := map[envelope.Status]int{}
	for s := range statuses {
		count[s]++
	}
	for c := range codes {
		// A racing duplicate may find the first sender still holding the
		// dispatch lease: it is stored, so it answers 200 or 503, never
		// an error.
		require.Contains(t, []int{http.StatusOK, http.StatusServiceUnavailable}, c)
	}
	require.Equal(t, 1, count[envelope.StatusEnqueued], fmt.Sprint(count))
	require.Len(t, b.messages(t, topology.Billing, "evt_1PzB7sLkdIwHu7ixQm3nT0aX"), 1)
}

// Stripe re-serializes an event on every delivery attempt: pending_webhooks
// changes as other endpoints succeed and key order is not promised. A real
// retry is an acknowledged duplicate (before, it was a 409 until Stripe gave
// up); a genuinely different body under the same id is still a conflict.
func TestStripeRetryWithReserializedBodyIsADuplicate(t *testing.T) {
	t.Parallel()
	b := setup(t, withSetting(webhookfn.EnvTenantMap, `{"default":"acme"}`))
	first := []byte(`{"id":"evt_retry","object":"event","api_version":"2024-06-20","created":1764676800,"livemode":false,"pending_webhooks":1,"request":{"id":"req_1","idempotency_key":null},"type":"invoice.paid","data":{"object":{"id":"in_9","object":"invoice","amount_paid":4900}}}`)
	resp, a := b.do(t, signed(first))
	require.Equal(t, http.StatusOK, resp.StatusCode, resp.Body)
	require.Equal(t, envelope.StatusEnqueued, a.Status)

	retry := []byte(`{"pending_webhooks":0,"type":"invoice.paid","livemode":false,"id":"evt_retry","request":{"idempotency_key":null,"id":"req_1"},"created":1764676800,"object":"event","data":{"object":{"amount_paid":4900,"object":"invoice","id":"in_9"}},"api_version":"2024-06-20"}`)
	resp, a = b.do(t, signed(retry))
	require.Equal(t, http.StatusOK, resp.StatusCode, resp.Body)
	require.Equal(t, envelope.StatusDuplicate, a.Status)

	changed := []byte(`{"id":"evt_retry","object":"event","api_version":"2024-06-20","created":1764676800,"pending_webhooks":0,"type":"invoice.paid","data":{"object":{"id":"in_9","object":"invoice","amount_paid":1}}}`)
	resp, a = b.do(t, signed(changed))
	require.Equal(t, http.StatusConflict, resp.StatusCode, resp.Body)
	require.Equal(t, envelope.CodeIdempotencyConflict, a.Error.Code)
	require.Len(t, b.messages(t, topology.Billing, "evt_retry"), 1, "delivered once")
}

// A signed Stripe body carrying text SQS or its local emulator refuse is
// stored and delivered (before: answered 503 "accepted", then never
// delivered), and its consumer reads the same value; a body that is not
// UTF-8 at all is refused with 400 before anything is stored.
func TestStripeTextSQSRefusesIsDelivered(t *testing.T) {
	t.Parallel()
	b := setup(t, withSetting(webhookfn.EnvTenantMap, `{"default":"acme"}`))
	body := []byte("{\"id\":\"evt_text\",\"object\":\"event\",\"type\":\"invoice.paid\",\"created\":1764676800,\"data\":{\"object\":{\"id\":\"in_Zoë😀\"," +
		"\"customer_name\":\"Zoë 😀 \U0010FFFF\",\"memo\":\"a\uFFFEb\uFFFFc\",\"ctl\":\"\\u0000\\u0007\\u001f\\u007f\",\"lone\":\"\\ud800\\udfff\"}}}")
	resp, a := b.do(t, signed(body))
	require.Equal(t, http.StatusOK, resp.StatusCode, resp.Body)
	require.Equal(t, envelope.StatusEnqueued, a.Status)
	msgs := b.messages(t, topology.Billing, "evt_text")
	require.Len(t, msgs, 1)
	want, err := canonjson.Canonical(body)
	require.NoError(t, err)
	got, err := canonjson.Canonical(msgs[0].Payload)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "the consumer reads the same Stripe event")
	require.Equal(t, "in_Zoë😀", msgs[0].Subject)

	invokes := b.invokes()
	notUTF8 := []byte("{\"id\":\"evt_bytes\",\"object\":\"event\",\"type\":\"invoice.paid\",\"created\":1764676800,\"data\":{\"object\":{\"id\":\"in_1\",\"memo\":\"\xff\xfe\"}}}")
	resp, a = b.do(t, signed(notUTF8))
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, resp.Body)
	require.Equal(t, webhook.CodeInvalidEvent, a.Error.Code)
	require.Equal(t, invokes, b.invokes(), "refused before ingest: nothing stored")
}
