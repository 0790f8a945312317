package webhook

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
)

// Relay publishes a provider's events that reach the platform
// authenticated by the channel they come through instead of a signature:
// Stripe's Amazon EventBridge destination, whose events only Stripe can
// put on the stage's partner event bus and only that bus's rule can hand
// to the function (IAM). Everything after verification is the webhook
// route's own: the provider's Canonicalize (id, type, tenant map), the
// envelope, the ingest call and its dedupe, so an event that arrives both
// ways is one event.
type Relay struct {
	d Deps
}

// NewRelay builds a relay; Provider and Ingest are required. The
// provider's Verify is never called.
func NewRelay(d Deps) (*Relay, error) {
	if d.Provider == nil || d.Ingest == nil {
		return nil, errors.New("webhook: Provider and Ingest are required")
	}
	d.Log = logging.OrDiscard(d.Log)
	if d.Metrics == nil {
		d.Metrics = metric.Discard()
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Relay{d: d}, nil
}

// Delivered is what became of an event a Relay did not refuse: its id
// and ingest's status (enqueued, duplicate_acknowledged, unrouted), or
// StatusAcknowledged for a delivery the provider acknowledges without an
// event.
type Delivered struct {
	EventID string          `json:"eventId,omitempty"`
	Status  envelope.Status `json:"status"`
}

// Publish canonicalizes an authenticated delivery (Body is the provider's
// event, as the webhook route would receive it) and publishes it to
// ingest. A nil error: delivered, or a duplicate of an event already
// stored (whichever way it came first), which Delivered tells apart.
// Otherwise the error is an *Error whose retry intent Retryable reads:
// ingest unavailable or failing, topics still pending, or a tenant the map
// does not name yet (the same answers that make the provider retry a
// webhook delivery) are worth retrying; anything else (not the provider's
// event, rejected by ingest) is refused for good. Every refusal is counted
// like the route's (MetricRefused).
func (r *Relay) Publish(ctx context.Context, d Delivery) (Delivered, error) {
	if d.ReceivedAt.IsZero() {
		d.ReceivedAt = r.d.Now()
	}
	ctx = logging.With(ctx, "provider", r.d.Provider.Name())
	o := publish(ctx, r.d, d, time.Now())
	var e *Error
	switch {
	case o.ack != nil:
		return Delivered{Status: StatusAcknowledged}, nil
	case o.refusal != nil:
		e = o.refusal
	case o.status >= 200 && o.status < 300:
		return Delivered{EventID: o.result.EventID, Status: o.result.Status}, nil
	default:
		e = &Error{Status: o.status, Code: o.code(), Message: "ingest did not store the event", EventID: o.result.EventID}
		if o.result.Error != nil {
			e.Message = o.result.Error.Message
		}
	}
	r.d.Metrics.Emit(map[string]string{"Provider": r.d.Provider.Name(), "Code": string(e.Code)}, metric.Metric{Name: MetricRefused, Unit: metric.Count, Value: 1})
	return Delivered{}, e
}

// Retryable reports whether a Relay's error may succeed when the event is
// delivered again: a 5xx answer, or a 422 (a tenant an operator has yet to
// map). A 4xx other than 422 is the event's own fault.
func Retryable(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return err != nil
	}
	return e.Status >= http.StatusInternalServerError || e.Status == http.StatusUnprocessableEntity
}

// Code is the machine-readable code of a Relay's error ("" for none).
func Code(err error) envelope.Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
