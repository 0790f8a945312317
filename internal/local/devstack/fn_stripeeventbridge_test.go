package devstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/devapi"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	"github.com/siteswarm/eventplatform/internal/wire/stripeeventbridgefn"
)

// A Stripe event that arrives by webhook and through Stripe's EventBridge
// destination is one event, whichever comes first: one stored record
// under the Stripe id, one message on billing.events. The EventBridge copy
// is re-serialized (compact, pending_webhooks changed), as Stripe's
// deliveries are.
func TestStripeEventByWebhookAndEventBridgeIsOneEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sent := &sendRecorder{}
	st, err := devstack.Start(ctx, devstack.Options{
		Addr: "127.0.0.1:0", Log: logging.Discard(), Env: envconf.FromMap(nil),
		APIOptions: []func(*middleware.Stack) error{sent.APIOption},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	require.Equal(t, stripeeventbridgefn.Name, devapi.StripeEventBridgeFunction, "the name evp invokes")
	events := &dynamo.Events{Client: st.Clients.DynamoDB, Table: st.Resources.EventsTable}
	billing := st.Resources.Queues[topology.Billing].URL

	webhook := func(body []byte) envelope.Result {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, st.URL()+devstack.StripeWebhookPath, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set(stripe.SignatureHeader, stripe.Sign(body, time.Now(), devstack.DefaultStripeSecret))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
		var res envelope.Result
		require.NoError(t, json.Unmarshal(raw, &res))
		return res
	}
	bridge := func(body []byte) {
		t.Helper()
		ev, ok := stripe.PartnerEvent(reserialize(t, body), devstack.LocalStripeEventSource, "eb-"+t.Name(), time.Now())
		require.True(t, ok)
		payload, err := json.Marshal(ev)
		require.NoError(t, err)
		out, err := st.Clients.Lambda.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(stripeeventbridgefn.Name), Payload: payload})
		require.NoError(t, err)
		require.Nil(t, out.FunctionError, string(out.Payload))
	}

	// Webhook first, then EventBridge.
	invoice, err := os.ReadFile("../../../events/stripe/invoice.paid.json")
	require.NoError(t, err)
	const invoiceID = "evt_1PzB7sLkdIwHu7ixQm3nT0aX"
	require.Equal(t, envelope.StatusEnqueued, webhook(invoice).Status)
	require.Equal(t, 1, sent.to(billing))
	bridge(invoice)
	require.Equal(t, 1, sent.to(billing), "the EventBridge copy is the stored event: no second message")
	rec, rows, err := events.Load(ctx, invoiceID)
	require.NoError(t, err)
	require.Equal(t, "acme", rec.Event.TenantID)
	require.Len(t, rows, 1)

	// EventBridge first, then the webhook: stored under detail.id with the
	// webhook's tenant rules, and the webhook's delivery is a duplicate.
	failed, err := os.ReadFile("../../../events/stripe/invoice.payment_failed.json")
	require.NoError(t, err)
	var head struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(failed, &head))
	bridge(failed)
	require.Equal(t, 2, sent.to(billing))
	rec, _, err = events.Load(ctx, head.ID)
	require.NoError(t, err)
	require.Equal(t, "stripe.invoice.payment_failed", rec.Event.Type)
	require.Equal(t, envelope.StatusDuplicate, webhook(failed).Status)
	require.Equal(t, 2, sent.to(billing), "one message per event")
	require.Equal(t, sent.total(), sent.to(billing))
}

// reserialize is body as Stripe's next delivery of it: compact, with
// pending_webhooks changed (the immutable part, what identifies the
// event, is the same).
func reserialize(t *testing.T, body []byte) []byte {
	t.Helper()
	var ev map[string]any
	require.NoError(t, json.Unmarshal(body, &ev))
	ev["pending_webhooks"] = 7
	out, err := json.Marshal(ev)
	require.NoError(t, err)
	return out
}

// The stack has the stage's stripe-eventbridge DLQ, under the name evp
// drains by default in `make dev` (prefix "local"), and serves it to
// clients that know only the stack's URL (SQSPath): what DeadLetterStripeEvent
// puts there in either shape reads back as the event.
func TestStripeEventBridgeDLQ(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	require.Equal(t, devapi.StripeEventBridgeDLQ, stripeeventbridgefn.DLQName("local"), "the local stack's prefix in the emulators")
	st, err := devstack.Start(ctx, devstack.Options{Addr: "127.0.0.1:0", Log: logging.Discard(), Env: envconf.FromMap(nil)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	dlq, err := st.StripeEventBridgeDLQ(ctx)
	require.NoError(t, err)

	ev, ok := stripe.PartnerEvent([]byte(`{"id":"evt_dlq_1","object":"event","type":"invoice.paid","data":{"object":{"id":"in_1"}}}`), devstack.LocalStripeEventSource, "eb-1", time.Now())
	require.True(t, ok)
	for _, shape := range []stripe.DeadLetterShape{stripe.ShapeRule, stripe.ShapeFailureRecord} {
		_, err := st.DeadLetterStripeEvent(ctx, ev, shape, "ingest unavailable")
		require.NoError(t, err)
	}
	_, err = st.DeadLetterStripeEvent(ctx, ev, "sideways", "")
	require.Error(t, err)

	viaStack := devapi.SQSClient(devapi.Config(), st.URL()+devstack.SQSPath)
	url, err := viaStack.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(stripeeventbridgefn.DLQName(st.Resources.Prefix))})
	require.NoError(t, err)
	require.Equal(t, dlq, aws.ToString(url.QueueUrl))
	got, err := viaStack.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}})
	require.NoError(t, err)
	require.Len(t, got.Messages, 2)
	shapes := map[stripe.DeadLetterShape]bool{}
	for _, m := range got.Messages {
		dl, err := stripe.ReadDeadLetter([]byte(aws.ToString(m.Body)))
		require.NoError(t, err)
		require.Equal(t, "evt_dlq_1", dl.EventID)
		shapes[dl.Shape] = true
		if dl.Shape == stripe.ShapeRule {
			require.Equal(t, "ingest unavailable", aws.ToString(m.MessageAttributes["ERROR_MESSAGE"].StringValue), "EventBridge's attributes")
		}
	}
	require.Len(t, shapes, 2)
}
