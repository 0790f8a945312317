package stripe

import (
	"bytes"
	"context"
	"log/slog"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/webhook"
)

// PartnerSourcePrefix starts the event source (and the partner event bus)
// of every Stripe event destination for Amazon EventBridge:
// aws.partner/stripe.com/<destination id>.
const PartnerSourcePrefix = "aws.partner/stripe.com/"

// EventBridge receives Stripe's Amazon EventBridge event destination: a
// rule on the stage's partner event bus invokes it with each event, whose
// detail is the Stripe event as a webhook endpoint would receive it. It
// publishes the detail through the relay exactly as the webhook path does
// (same id, tenant rules and dedupe). A failure fails the invocation:
// Lambda retries it, then sends it to the rule's dead-letter queue.
type EventBridge struct {
	Relay *webhook.Relay
	Log   *slog.Logger
}

// Handle serves one EventBridge event.
func (b *EventBridge) Handle(ctx context.Context, ev events.EventBridgeEvent) error {
	d, err := FromEventBridge(ev)
	if err != nil {
		logging.OrDiscard(b.Log).ErrorContext(ctx, "stripe: EventBridge event refused", "eventBridgeId", ev.ID, "source", ev.Source, "error", err)
		return err
	}
	return b.Relay.Publish(ctx, d)
}

// FromEventBridge is the delivery an EventBridge event carries: its detail,
// the Stripe event (snapshot events only, as on the webhook path). The
// event must come from a Stripe partner event source.
func FromEventBridge(ev events.EventBridgeEvent) (webhook.Delivery, error) {
	if !strings.HasPrefix(ev.Source, PartnerSourcePrefix) {
		return webhook.Delivery{}, webhook.Invalid(webhook.CodeInvalidEvent, "the event's source %q is not a Stripe partner event source (%s…)", ev.Source, PartnerSourcePrefix)
	}
	detail := bytes.TrimSpace(ev.Detail)
	if len(detail) == 0 || detail[0] != '{' {
		return webhook.Delivery{}, webhook.Invalid(webhook.CodeInvalidEvent, "the event's detail is not a Stripe event object")
	}
	return webhook.Delivery{Body: detail, RequestID: ev.ID, ReceivedAt: ev.Time, Headers: map[string]string{}}, nil
}
