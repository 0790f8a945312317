package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/lambdainvoke"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/kit/canonjson"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	"github.com/siteswarm/eventplatform/internal/wire/ingestfn"
)

// eventBridge is Stripe's event destination for Amazon EventBridge as its
// rule's target receives it: the Stripe event as the detail, compacted
// and re-serialized by EventBridge (key order is not the webhook's), with
// pending_webhooks as it stood when Stripe sent it that way.
func eventBridge(t *testing.T, body []byte, pending int) events.EventBridgeEvent {
	t.Helper()
	var ev map[string]any
	require.NoError(t, json.Unmarshal(body, &ev))
	ev["pending_webhooks"] = pending
	detail, err := json.Marshal(ev) // sorted keys, compact: other bytes than the webhook's
	require.NoError(t, err)
	return events.EventBridgeEvent{
		Version: "0", ID: "6a7e8feb-b491-4cf7-a9f1-bf3703467718", DetailType: ev["type"].(string),
		Source: stripe.PartnerSourcePrefix + "ed_test_61Tgbw4tAWzZeirTG16TVtIa1oSQktdZeofdAxL32Ni4", AccountID: "123456789012",
		Time: time.Now().UTC(), Region: "eu-west-1", Resources: []string{}, Detail: detail,
	}
}

func (b *bundle) eventBridge(t *testing.T) (*stripe.EventBridge, *metric.Emitter) {
	t.Helper()
	m := &metric.Emitter{W: b.metrics}
	relay, err := webhook.NewRelay(webhook.Deps{Provider: b.provider, Ingest: &lambdainvoke.Ingest{Client: b.env.Lambda, Function: ingestfn.Name}, Metrics: m})
	require.NoError(t, err)
	return &stripe.EventBridge{Relay: relay}, m
}

// An event Stripe sends both to the webhook endpoint and to EventBridge is
// one event, whichever arrives first: stored once, delivered once, each
// later copy acknowledged as a duplicate.
func TestAnEventByEventBridgeAndByWebhookIsOneEvent(t *testing.T) {
	t.Parallel()
	for _, eventBridgeFirst := range []bool{true, false} {
		t.Run(map[bool]string{true: "EventBridge first", false: "webhook first"}[eventBridgeFirst], func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			eb, _ := b.eventBridge(t)
			ctx := context.Background()
			body := sample(t, "invoice.paid.json")
			const id = "evt_1PzB7sLkdIwHu7ixQm3nT0aX"
			viaWebhook := func(want envelope.Status) {
				resp, a := b.do(t, signed(body))
				require.Equal(t, http.StatusOK, resp.StatusCode, resp.Body)
				require.Equal(t, want, a.Status)
			}
			if eventBridgeFirst {
				require.NoError(t, eb.Handle(ctx, eventBridge(t, body, 2)))
				viaWebhook(envelope.StatusDuplicate)
			} else {
				viaWebhook(envelope.StatusEnqueued)
				require.NoError(t, eb.Handle(ctx, eventBridge(t, body, 0)), "the EventBridge copy is a duplicate")
			}
			require.NoError(t, eb.Handle(ctx, eventBridge(t, body, 1)), "EventBridge's own retry")
			msgs := b.messages(t, topology.Billing, id)
			require.Len(t, msgs, 1, "delivered once")
			ev := msgs[0]
			require.Equal(t, "stripe.invoice.paid", ev.Type)
			require.Equal(t, "acme", ev.TenantID, "the webhook's tenant rules")
			require.Equal(t, "in_1PzB7pLkdIwHu7ixb1Zc2R9Q", ev.Subject)
			a, err := canonjson.Canonical(ev.Payload)
			require.NoError(t, err)
			var stored, sent map[string]any
			require.NoError(t, json.Unmarshal(a, &stored))
			require.NoError(t, json.Unmarshal(body, &sent))
			require.Equal(t, sent["data"], stored["data"], "the Stripe event is the payload")
			_, rows, err := b.events.Load(ctx, id)
			require.NoError(t, err, "stored under the Stripe id, as the webhook stores it")
			require.Len(t, rows, 1)
			require.Equal(t, 1, b.depth(t, topology.Billing))
		})
	}
}

// What the webhook refuses, the EventBridge path refuses with the same
// code — and fails the invocation, so Lambda retries it and then
// dead-letters it: an unmapped Connect account, a different event under a
// stored id, an event that is not Stripe's.
func TestEventBridgeRefusalsFailTheInvocation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	eb, _ := b.eventBridge(t)
	ctx := context.Background()
	code := func(err error) envelope.Code {
		t.Helper()
		var e *webhook.Error
		require.True(t, errors.As(err, &e), "got %v", err)
		return e.Code
	}
	connect := sample(t, "checkout.session.completed.json")
	var ev map[string]any
	require.NoError(t, json.Unmarshal(connect, &ev))
	ev["account"] = "acct_unmapped"
	unmapped, err := json.Marshal(ev)
	require.NoError(t, err)
	require.Equal(t, webhook.CodeUnknownAccount, code(eb.Handle(ctx, eventBridge(t, unmapped, 1))))
	require.Contains(t, b.metricLines(), `"Code":"unknown_account"`, "counted as the webhook counts it: the alarm sees both paths")

	body := sample(t, "invoice.paid.json")
	require.NoError(t, eb.Handle(ctx, eventBridge(t, body, 1)))
	ev = map[string]any{}
	require.NoError(t, json.Unmarshal(body, &ev))
	ev["data"].(map[string]any)["object"].(map[string]any)["amount_paid"] = 1
	tampered, err := json.Marshal(ev)
	require.NoError(t, err)
	require.Equal(t, envelope.CodeIdempotencyConflict, code(eb.Handle(ctx, eventBridge(t, tampered, 1))))

	other := eventBridge(t, body, 1)
	other.Source = "aws.partner/example.com/x"
	require.Equal(t, webhook.CodeInvalidEvent, code(eb.Handle(ctx, other)))
	empty := eventBridge(t, body, 1)
	empty.Detail = json.RawMessage(`"x"`)
	require.Equal(t, webhook.CodeInvalidEvent, code(eb.Handle(ctx, empty)))
	require.Equal(t, 1, b.depth(t, topology.Billing), "only the one good event was sent")
}
