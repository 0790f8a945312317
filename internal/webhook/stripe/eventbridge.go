package stripe

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/webhook"
)

// PartnerSourcePrefix starts the source of every event Stripe's Amazon
// EventBridge destination puts on its partner event bus:
// aws.partner/stripe.com/<destination id>, which is also the partner event
// source's and the bus's name.
const PartnerSourcePrefix = "aws.partner/stripe.com"

// EventBridge is the handler of Stripe events delivered through Amazon
// EventBridge (a rule on the stage's partner event bus invokes it
// asynchronously): the event's detail is the Stripe event, which the
// Relay publishes as the webhook route would (same envelope, id detail.id,
// same tenant map, same dedupe). Nothing is verified: only Stripe can put
// events on its partner event source, and only the rule on that bus may
// invoke the function (docs/webhooks.md#stripe-through-amazon-eventbridge).
type EventBridge struct {
	Relay *webhook.Relay
	Log   *slog.Logger
}

// NewEventBridge builds the handler.
func NewEventBridge(relay *webhook.Relay, log *slog.Logger) (*EventBridge, error) {
	if relay == nil {
		return nil, errors.New("stripe: a relay to ingest is required")
	}
	return &EventBridge{Relay: relay, Log: logging.OrDiscard(log)}, nil
}

// OutcomeRefused is the status of an Outcome refused for good.
const OutcomeRefused envelope.Status = "refused"

// Outcome is Handle's answer: what became of the event. The rule invokes
// the function asynchronously and ignores it; `evp stripe
// redrive-eventbridge` invokes it synchronously and reports it per
// message. Status is ingest's (enqueued, duplicate_acknowledged,
// unrouted), webhook.StatusAcknowledged, or OutcomeRefused with the code
// and message of a refusal for good.
type Outcome struct {
	Status  envelope.Status `json:"status"`
	EventID string          `json:"eventId,omitempty"`
	Code    envelope.Code   `json:"code,omitempty"`
	Message string          `json:"message,omitempty"`
}

// Handle publishes one EventBridge event. A failure worth retrying
// (webhook.Retryable: ingest unavailable, topics pending, a Connect
// account not mapped yet) is returned, so Lambda retries the asynchronous
// invocation and then sends it to the adapter's dead-letter queue; an
// event refused for good (not from Stripe's partner source, not a
// snapshot Stripe event, rejected by ingest) is logged with its code and
// not retried: its Outcome says so.
func (h *EventBridge) Handle(ctx context.Context, ev events.EventBridgeEvent) (Outcome, error) {
	ctx = logging.With(ctx, "eventBridgeId", ev.ID, "eventBridgeSource", ev.Source, "detailType", ev.DetailType)
	if !strings.HasPrefix(ev.Source, PartnerSourcePrefix) || len(ev.Detail) == 0 {
		h.Log.ErrorContext(ctx, "stripe eventbridge: refused for good, not retried: not an event of Stripe's partner event source",
			"code", webhook.CodeInvalidEvent, "bytes", len(ev.Detail))
		return Outcome{Status: OutcomeRefused, Code: webhook.CodeInvalidEvent, Message: "not an event of Stripe's partner event source"}, nil
	}
	d, err := h.Relay.Publish(ctx, webhook.Delivery{Body: ev.Detail, RequestID: ev.ID})
	switch {
	case err == nil:
		return Outcome{Status: d.Status, EventID: d.EventID}, nil
	case webhook.Retryable(err):
		h.Log.WarnContext(ctx, "stripe eventbridge: not published; returned for EventBridge's retry", "code", webhook.Code(err), "error", err)
		return Outcome{}, err
	}
	h.Log.ErrorContext(ctx, "stripe eventbridge: refused for good, not retried", "code", webhook.Code(err), "error", err)
	o := Outcome{Status: OutcomeRefused, Code: webhook.Code(err), Message: err.Error()}
	var e *webhook.Error
	if errors.As(err, &e) {
		o.EventID, o.Message = e.EventID, e.Message
	}
	return o, nil
}

// PartnerEvent is the EventBridge event Stripe's destination puts on the
// partner bus of source (PartnerSourcePrefix/<destination id>) for one
// Stripe event: detail-type is the Stripe type, detail the event. The
// local stack and `evp stripe send --via eventbridge` deliver it as the
// rule would; false when body is not a Stripe event with an id and type.
func PartnerEvent(body []byte, source, id string, at time.Time) (events.EventBridgeEvent, bool) {
	var head struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	}
	if json.Unmarshal(body, &head) != nil || head.ID == "" || head.Type == "" {
		return events.EventBridgeEvent{}, false
	}
	return events.EventBridgeEvent{
		Version: "0", ID: id, DetailType: head.Type, Source: source,
		AccountID: "000000000000", Time: at.UTC(), Region: "us-east-1",
		Resources: []string{}, Detail: json.RawMessage(body),
	}, true
}
