package webhook

import (
	"context"
	"errors"
	"time"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
)

// Relay publishes a provider's events that reach the platform through a
// trusted AWS channel instead of its webhook route: Stripe's Amazon
// EventBridge event destination puts them on a partner event bus, and a
// rule there invokes the relay's function. Nothing is signed: the partner
// bus (only the provider can put events on it) and IAM (only that rule may
// invoke the function) are the trust (docs/webhooks.md). Each event is
// published exactly as the webhook path publishes it — the provider's
// Canonicalize (same id, same tenant rules) and ingest's dedupe — so an
// event that arrives both ways is one event.
type Relay struct {
	d Deps
}

// NewRelay builds a relay from the webhook handler's dependencies.
func NewRelay(d Deps) (*Relay, error) {
	if d.Provider == nil || d.Ingest == nil {
		return nil, errors.New("webhook: relay: Provider and Ingest are required")
	}
	d.Log = logging.OrDiscard(d.Log)
	if d.Metrics == nil {
		d.Metrics = metric.Discard()
	}
	d.Now = clock.Or(d.Now)
	return &Relay{d: d}, nil
}

// Publish publishes one delivery. It returns nil once the event is stored
// (on every topic, or some still pending: the sweeper finishes those), was
// stored before, is acknowledged without an event or has no route; any
// other outcome is the refusal (*Error: its code, message and event id),
// so the invocation fails and the channel retries it, then dead-letters
// it (nothing is lost). Refusals are counted as the webhook's are
// (WebhookRefused by Provider and Code: unknown_account's alarm sees both
// paths).
func (r *Relay) Publish(ctx context.Context, d Delivery) error {
	start := time.Now()
	if d.ReceivedAt.IsZero() {
		d.ReceivedAt = r.d.Now()
	}
	ctx = logging.With(ctx, "provider", r.d.Provider.Name(), "relayId", d.RequestID)
	o := publish(ctx, r.d, d, start)
	var err *Error
	switch {
	case o.ack != nil:
		return nil
	case o.refusal != nil:
		err = o.refusal
	case o.result.Status == envelope.StatusAccepted:
		return nil // stored; the sweeper re-drives the pending topics
	case o.status >= 400:
		err = &Error{Status: o.status, Code: o.code(), Message: "ingest rejected the event", EventID: o.result.EventID}
		if o.result.Error != nil {
			err.Message = o.result.Error.Message
		}
	default:
		return nil
	}
	r.d.Metrics.Emit(map[string]string{"Provider": r.d.Provider.Name(), "Code": string(err.Code)}, metric.Metric{Name: MetricRefused, Unit: metric.Count, Value: 1})
	return err
}
