package webhook

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
)

// Ingester publishes one envelope to the ingestion core and returns its
// result. In AWS it is a synchronous Lambda invoke of ingest
// (internal/aws/lambdainvoke); *ingest.Service satisfies it in-process.
type Ingester interface {
	Publish(ctx context.Context, envelope []byte) (envelope.Result, error)
}

// Handler is the API Gateway HTTP API (payload format 2.0) handler of one
// provider's webhook route: size check → verify → canonicalize → invoke
// ingest → map the result to HTTP. It always answers with a response, never
// a function error, so the provider sees a meaningful status and body.
type Handler struct {
	cfg Config
	d   Deps
}

// MetricRefused counts deliveries refused before ingest, per Provider and
// Code (unknown_account has its own alarm).
const MetricRefused = "WebhookRefused"

// Handle serves one request.
func (h *Handler) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	resp, refused := h.handle(ctx, req)
	if refused != "" {
		h.d.Metrics.Emit(map[string]string{"Provider": h.d.Provider.Name(), "Code": string(refused)}, metric.Metric{Name: MetricRefused, Unit: metric.Count, Value: 1})
	}
	return resp, nil
}

// handle serves one request; refused is the error code of an answer that
// is not a success.
func (h *Handler) handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (resp events.APIGatewayV2HTTPResponse, refused envelope.Code) {
	start := time.Now()
	reqID := req.RequestContext.RequestID
	if reqID == "" {
		if lc, ok := lambdacontext.FromContext(ctx); ok {
			reqID = lc.AwsRequestID
		}
	}
	ctx = logging.With(ctx, "provider", h.d.Provider.Name(), "apiRequestId", reqID)
	log := h.d.Log

	if m := req.RequestContext.HTTP.Method; m != http.MethodPost {
		log.InfoContext(ctx, "webhook: method not allowed", "method", m)
		return h.refuse(&Error{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed, Message: "only POST is accepted"}, reqID)
	}
	body, berr := decodeBody(req.Body, req.IsBase64Encoded, MaxBodyBytes)
	if berr != nil {
		log.WarnContext(ctx, "webhook: body refused", "code", berr.Code, "error", berr)
		return h.refuse(berr, reqID)
	}
	d := Delivery{Body: body, Headers: req.Headers, Source: req.PathParameters["source"], RequestID: reqID, ReceivedAt: h.d.Now()}
	if d.Source != "" {
		ctx = logging.With(ctx, "providerSource", d.Source)
	}

	if err := h.d.Provider.Verify(ctx, d); err != nil {
		// Fail closed: whatever went wrong, an unverified delivery is a 401.
		e := asError(err, Unauthorized(CodeSignatureMismatch, "the signature could not be verified"))
		log.WarnContext(ctx, "webhook: signature rejected", "code", e.Code, "reason", e.Message, "bytes", len(body), "sourceIp", req.RequestContext.HTTP.SourceIP)
		return h.refuse(e, reqID)
	}
	o := publish(ctx, h.d, d, start)
	switch {
	case o.ack != nil:
		return h.reply(http.StatusOK, acknowledged{Status: StatusAcknowledged, Message: o.ack.Reason}, reqID, ""), ""
	case o.refusal != nil:
		return h.refuse(o.refusal, reqID)
	}
	return h.reply(o.status, o.result, reqID, o.result.EventID), o.code()
}

// outcome is what became of a verified delivery (publish): acknowledged
// without an event, refused (before ingest, or ingest's failure), or
// ingest's result and the HTTP status it maps to.
type outcome struct {
	ack     *Ack
	refusal *Error
	result  envelope.Result
	status  int
}

// code is the error code of an outcome that is not a success ("" for one
// that is).
func (o outcome) code() envelope.Code {
	switch {
	case o.refusal != nil:
		return o.refusal.Code
	case o.status >= 400 && o.result.Error != nil:
		return o.result.Error.Code
	}
	return ""
}

// publish canonicalizes a verified delivery and publishes it to ingest.
func publish(ctx context.Context, deps Deps, d Delivery, start time.Time) outcome {
	log := deps.Log
	ev, err := deps.Provider.Canonicalize(ctx, d)
	var ack *Ack
	if errors.As(err, &ack) {
		log.InfoContext(ctx, "webhook: delivery acknowledged without an event", "reason", ack.Reason)
		return outcome{ack: ack, status: http.StatusOK}
	}
	if err != nil {
		e := asError(err, Invalid(CodeInvalidEvent, "the event could not be read"))
		if e.Status == http.StatusUnprocessableEntity {
			// The provider keeps retrying until an operator maps the tenant:
			// say so loudly, with what they need to fix it.
			log.ErrorContext(ctx, "webhook: event not attributable to a tenant; fix the tenant map (the provider retries)", "eventId", e.EventID, "code", e.Code, "reason", e.Message)
		} else {
			log.WarnContext(ctx, "webhook: event refused", "eventId", e.EventID, "code", e.Code, "reason", e.Message, "error", e.Cause)
		}
		return outcome{refusal: e}
	}
	ctx = logging.With(ctx, "eventId", ev.ID, "tenantId", ev.TenantID, "type", ev.Type)

	raw, err := Encode(ev)
	if err != nil {
		log.ErrorContext(ctx, "webhook: canonical envelope could not be encoded", "error", err)
		return outcome{refusal: &Error{Status: http.StatusInternalServerError, Code: "internal_error", Message: "the event could not be forwarded", EventID: ev.ID}}
	}
	res, err := deps.Ingest.Publish(ctx, raw)
	if err != nil {
		status := IngestErrorStatus(err)
		code, msg := CodeIngestFailed, "ingest failed; retry later"
		if status == http.StatusServiceUnavailable {
			code, msg = CodeIngestUnavailable, "ingest is busy or timed out; retry later"
		}
		log.ErrorContext(ctx, "webhook: ingest call failed", "status", status, "error", err, "durationMs", time.Since(start).Milliseconds())
		return outcome{refusal: &Error{Status: status, Code: code, Message: msg, EventID: ev.ID, Cause: err}}
	}
	if res.EventID == "" {
		res.EventID = ev.ID
	}
	status := ResultStatus(res)
	attrs := []any{"status", res.Status, "httpStatus", status, "topics", res.Topics, "pendingTopics", res.PendingTopics, "durationMs", time.Since(start).Milliseconds()}
	switch {
	case status == http.StatusBadGateway:
		log.ErrorContext(ctx, "webhook: ingest answered outside its contract", attrs...)
	case res.Status == envelope.StatusRejected:
		if res.Error != nil {
			attrs = append(attrs, "code", res.Error.Code, "reason", res.Error.Message)
		}
		log.WarnContext(ctx, "webhook: ingest rejected the event", attrs...)
	case res.Status == envelope.StatusAccepted || len(res.PendingTopics) > 0:
		log.WarnContext(ctx, "webhook: event stored, some topics pending", attrs...)
	default:
		log.InfoContext(ctx, "webhook: event delivered", attrs...)
	}
	if status == http.StatusBadGateway {
		return outcome{refusal: &Error{Status: status, Code: CodeIngestFailed, Message: "ingest answered with an unknown status", EventID: ev.ID}}
	}
	if res.Status == envelope.StatusAccepted && res.Error == nil {
		// Every non-2xx answer carries an error code, this one too.
		res.Error = &envelope.Error{Code: CodeDispatchPending, Message: "the event is stored but not yet on every topic; retry to re-drive the pending topics"}
	}
	return outcome{result: res, status: status}
}

// acknowledged is the body of an Ack's 200.
type acknowledged struct {
	Status  envelope.Status `json:"status"`
	Message string          `json:"message"`
}

// asError returns err's *Error, or fallback carrying err as its cause.
func asError(err error, fallback *Error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	fallback.Cause = err
	return fallback
}
