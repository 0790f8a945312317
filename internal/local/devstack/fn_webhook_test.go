package devstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

// TestStripeWebhookThroughTheLocalStack posts signed Stripe events over
// HTTP to the local stack, as Stripe (or `stripe listen`) would, with the
// local default signing secret: API Gateway event → webhook-stripe →
// Lambda Invoke of ingest → DynamoDB + SQS.
func TestStripeWebhookThroughTheLocalStack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	calls := awslocal.NewCalls()
	sent := &sendRecorder{}
	st, err := devstack.Start(ctx, devstack.Options{
		Addr: "127.0.0.1:0", Log: logging.Discard(), Env: envconf.FromMap(nil),
		APIOptions: []func(*middleware.Stack) error{calls.APIOption, sent.APIOption},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	events := &dynamo.Events{Client: st.Clients.DynamoDB, Table: st.Resources.EventsTable}

	post := func(method string, body []byte, signature string) (*http.Response, envelope.Result) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, st.URL()+devstack.StripeWebhookPath, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
		if signature != "" {
			req.Header.Set(stripe.SignatureHeader, signature)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var res envelope.Result
		require.NoError(t, json.Unmarshal(raw, &res), string(raw))
		require.NotEmpty(t, resp.Header.Get("X-Request-Id"))
		return resp, res
	}
	sign := func(body []byte) string { return stripe.Sign(body, time.Now(), devstack.DefaultStripeSecret) }
	billingURL := st.Resources.Queues[topology.Billing].URL
	// Messages are counted as they are sent: the stack's own consumers may
	// take them off the queue before the test could look.
	sends := func() int {
		require.Equal(t, sent.total(), sent.to(billingURL), "nothing is sent anywhere but billing.events")
		return sent.to(billingURL)
	}

	invoice, err := os.ReadFile("../../../events/stripe/invoice.paid.json")
	require.NoError(t, err)
	const invoiceID = "evt_1PzB7sLkdIwHu7ixQm3nT0aX"

	resp, res := post(http.MethodPost, invoice, sign(invoice))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, envelope.StatusEnqueued, res.Status)
	require.Equal(t, invoiceID, resp.Header.Get("X-Event-Id"))
	require.Equal(t, []string{topology.Billing}, res.Topics)
	require.Equal(t, 1, sends(), "one message, on billing.events")
	rec, rows, err := events.Load(ctx, invoiceID)
	require.NoError(t, err)
	require.Equal(t, "acme", rec.Event.TenantID)
	require.Equal(t, "stripe.invoice.paid", rec.Event.Type)
	require.Len(t, rows, 1)
	require.Equal(t, topology.Billing, rows[0].Topic)
	// Ingest records the send after its answer (issue 37: off the ack's
	// critical path), so the row leaves pending shortly after, not at once.
	require.Eventually(t, func() bool {
		_, rows, err := events.Load(ctx, invoiceID)
		return err == nil && len(rows) == 1 && rows[0].Status != outbox.StatusPending
	}, 10*time.Second, 20*time.Millisecond, "the billing dispatch was recorded as sent")

	// Stripe redelivers: acknowledged, no second message.
	resp, res = post(http.MethodPost, invoice, sign(invoice))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, envelope.StatusDuplicate, res.Status)
	require.Equal(t, 1, sends(), "no second message")

	// An event type with no route: acknowledged, nothing stored.
	customer, err := os.ReadFile("../../../events/stripe/customer.created.json")
	require.NoError(t, err)
	resp, res = post(http.MethodPost, customer, sign(customer))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, envelope.StatusUnrouted, res.Status)
	_, _, err = events.Load(ctx, "evt_1PzE4kLkdIwHu7ixN2bV6cXz")
	require.ErrorIs(t, err, ledger.ErrNotFound)
	require.Equal(t, 1, sends())
	invokes := calls.Count("Lambda", "Invoke")
	require.Equal(t, 3, invokes, "each delivery invoked ingest once")

	// Refusals never reach ingest: a GET has no route (POST only, as
	// deployed: API Gateway's 404), a wrong signature is the function's.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, st.URL()+devstack.StripeWebhookPath, nil)
	require.NoError(t, err)
	got, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	raw, err := io.ReadAll(got.Body)
	require.NoError(t, err)
	got.Body.Close()
	require.Equal(t, http.StatusNotFound, got.StatusCode)
	require.JSONEq(t, `{"message":"Not Found"}`, string(raw))
	resp, res = post(http.MethodPost, invoice, stripe.Sign(invoice, time.Now(), "whsec_not_the_local_secret"))
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, envelope.Code("signature_mismatch"), res.Error.Code)
	require.Equal(t, invokes, calls.Count("Lambda", "Invoke"))
}

// sendRecorder is SDK middleware recording the queue of every SendMessage
// the stack's functions make.
type sendRecorder struct {
	mu   sync.Mutex
	urls []string
}

func (r *sendRecorder) APIOption(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("test.sendRecorder",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if m, ok := in.Parameters.(*sqs.SendMessageInput); ok {
				r.mu.Lock()
				r.urls = append(r.urls, aws.ToString(m.QueueUrl))
				r.mu.Unlock()
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}

func (r *sendRecorder) to(url string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, u := range r.urls {
		if u == url {
			n++
		}
	}
	return n
}

func (r *sendRecorder) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.urls)
}

// A stage with 1,000 Connect accounts: the local stack keeps the account map
// in its SSM as a deployed stage does (it outgrew the environment at
// ~80 accounts), the webhook reads it back at cold start through the real
// SDK client, and a Connect account's event lands in its tenant.
func TestConnectAccountsFromParameterStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	accounts := map[string]string{}
	for i := range 1000 {
		accounts[fmt.Sprintf("acct_1PzB7sLk%08d", i)] = fmt.Sprintf("tenant-%04d", i)
	}
	tenantMap, err := json.Marshal(webhook.TenantMap{Accounts: accounts})
	require.NoError(t, err)
	calls := awslocal.NewCalls()
	st, err := devstack.Start(ctx, devstack.Options{
		Addr: "127.0.0.1:0", Log: logging.Discard(),
		Env:        envconf.FromMap(map[string]string{webhookfn.EnvTenantMap: string(tenantMap)}),
		APIOptions: []func(*middleware.Stack) error{calls.APIOption},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	require.Positive(t, calls.Count("SSM", "GetParametersByPath"), "the webhook (and the jobs worker) read the map from SSM")

	body := []byte(`{"id":"evt_connect_999","object":"event","type":"invoice.paid","created":` + fmt.Sprint(time.Now().Unix()) +
		`,"account":"acct_1PzB7sLk00000999","data":{"object":{"id":"in_connect_999","object":"invoice"}}}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, st.URL()+devstack.StripeWebhookPath, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set(stripe.SignatureHeader, stripe.Sign(body, time.Now(), devstack.DefaultStripeSecret))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	events := &dynamo.Events{Client: st.Clients.DynamoDB, Table: st.Resources.EventsTable}
	rec, _, err := events.Load(ctx, "evt_connect_999") // a provider's ids are global keys
	require.NoError(t, err)
	require.Equal(t, "tenant-0999", rec.Event.TenantID)
}
