package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/siteswarm/eventplatform/internal/envelope"
)

// DefaultRetryAfter is the Retry-After of a 503 answer. Providers keep
// their own retry schedules (Stripe's first retry comes after about a
// minute); the header states when the platform expects to be ready: the
// sweeper re-drives a pending dispatch after about two minutes.
const DefaultRetryAfter = time.Minute

// ResultStatus maps an ingest result to the HTTP status the provider gets
// (docs/architecture.md §5, guarantee 2: a 200 only once the event is durably stored and on its
// queues):
//
//   - enqueued, duplicate_acknowledged, unrouted: 200;
//   - accepted (stored, some topic still pending): 503, so the provider's
//     retry re-drives only the pending topics;
//   - rejected: 409 for idempotency_conflict, else 400;
//   - anything else breaks the ingest contract: 502.
func ResultStatus(res envelope.Result) int {
	switch res.Status {
	case envelope.StatusEnqueued, envelope.StatusDuplicate, envelope.StatusUnrouted:
		return http.StatusOK
	case envelope.StatusAccepted:
		return http.StatusServiceUnavailable
	case envelope.StatusRejected:
		if res.Error != nil && res.Error.Code == envelope.CodeIdempotencyConflict {
			return http.StatusConflict
		}
		return http.StatusBadRequest
	}
	return http.StatusBadGateway
}

// IngestErrorStatus maps a failed ingest call: 503 when ingest is busy or
// slow (a context deadline, or an error in the chain with an
// Unavailable() bool method that returns true: throttling, timeouts, a
// Lambda service error), 502 when it failed (a function error).
func IngestErrorStatus(err error) int {
	var u interface{ Unavailable() bool }
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &u) && u.Unavailable() {
		return http.StatusServiceUnavailable
	}
	return http.StatusBadGateway
}

// errorBody is the body of every refusal: {"error":{"code","message"}},
// plus the event id once known.
type errorBody struct {
	EventID string          `json:"eventId,omitempty"`
	Error   *envelope.Error `json:"error"`
}

// reply builds an API Gateway response with a JSON body and the headers
// every answer carries.
func (h *Handler) reply(status int, body any, requestID, eventID string) events.APIGatewayV2HTTPResponse {
	b, err := json.Marshal(body)
	if err != nil {
		// Unreachable: bodies are plain structs.
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"internal_error","message":"response encoding failed"}}`)
	}
	hdr := map[string]string{
		"Content-Type":  "application/json",
		"Cache-Control": "no-store",
	}
	if requestID != "" {
		hdr["X-Request-Id"] = requestID
	}
	if eventID != "" {
		hdr["X-Event-Id"] = eventID
	}
	switch status {
	case http.StatusServiceUnavailable:
		hdr["Retry-After"] = strconv.Itoa(int(h.cfg.RetryAfter.Round(time.Second) / time.Second))
	case http.StatusMethodNotAllowed:
		hdr["Allow"] = http.MethodPost
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: hdr, Body: string(b)}
}

func (h *Handler) refuse(e *Error, requestID string) (events.APIGatewayV2HTTPResponse, envelope.Code) {
	return h.reply(e.Status, errorBody{EventID: e.EventID, Error: &envelope.Error{Code: e.Code, Message: e.Message}}, requestID, e.EventID), e.Code
}
