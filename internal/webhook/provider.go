package webhook

import (
	"context"
	"strings"
	"time"

	"github.com/siteswarm/eventplatform/internal/envelope"
)

// Provider is one webhook provider's verifier and canonicalizer, built by
// its Declaration's New; the Handler, body limits, the ingest invocation,
// the secret cache, the tenant map and the HTTP mapping are shared.
type Provider interface {
	// Name is the provider's producer name in the topology ("stripe"); it
	// labels logs.
	Name() string
	// Verify authenticates a delivery from its exact body bytes and
	// headers. A failure is an *Error (normally 401) and nothing else is
	// done with the delivery.
	Verify(ctx context.Context, d Delivery) error
	// Canonicalize maps a verified delivery to the platform envelope. The
	// envelope's Payload must be the delivery's body bytes, unmodified. A
	// failure is an *Error (400 for a malformed event, 422 for an event
	// that cannot be attributed to a tenant); an *Ack is a verified
	// delivery that carries no event (GitHub's ping).
	Canonicalize(ctx context.Context, d Delivery) (envelope.Event, error)
}

// Delivery is one webhook request as the provider sent it.
type Delivery struct {
	// Body is the raw request body (base64 already decoded).
	Body []byte
	// Headers are the request headers with lowercase names (API Gateway
	// payload 2.0 lowercases them and joins repeated ones with commas).
	Headers map[string]string
	// Source is the {source} of the delivery's path, for a provider with
	// sources (Declaration.Sources); "" otherwise.
	Source string
	// RequestID is API Gateway's request id.
	RequestID string
	// ReceivedAt is when the adapter received the delivery.
	ReceivedAt time.Time
}

// Header returns the named header, matching the name case-insensitively.
func (d Delivery) Header(name string) string {
	if v, ok := d.Headers[strings.ToLower(name)]; ok {
		return v
	}
	for k, v := range d.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}
