package stripe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/siteswarm/eventplatform/internal/envelope"
)

// DeadLetterShape is which of the two senders of the stripe-eventbridge
// DLQ wrote a message.
type DeadLetterShape string

const (
	// ShapeRule is a message the rule dead-lettered (it could not invoke
	// the function): the body is the EventBridge event itself. A function
	// DLQ (DeadLetterConfig) writes the same shape.
	ShapeRule DeadLetterShape = "eventbridge-event"
	// ShapeFailureRecord is a message the function's asynchronous
	// invocation sent to its on-failure destination after its retries: a
	// Lambda invocation record whose requestPayload is the event.
	ShapeFailureRecord DeadLetterShape = "lambda-failure-record"
)

// Codes of a dead letter that is not a Stripe EventBridge event in either
// shape (DeadLetterError).
const (
	// CodeDeadLetterNotJSON: the body is not a JSON object.
	CodeDeadLetterNotJSON envelope.Code = "not_json"
	// CodeDeadLetterUnknownShape: a JSON object that is neither an
	// EventBridge event nor a Lambda failure record of one.
	CodeDeadLetterUnknownShape envelope.Code = "unknown_shape"
	// CodeDeadLetterNotStripeSource: an EventBridge event whose source is
	// not Stripe's partner event source.
	CodeDeadLetterNotStripeSource envelope.Code = "not_stripe_source"
	// CodeDeadLetterNoStripeEvent: an event from Stripe's source whose
	// detail is not a Stripe event (no id or type).
	CodeDeadLetterNoStripeEvent envelope.Code = "not_a_stripe_event"
)

// DeadLetterError says why a dead letter cannot be redriven, with a
// machine-readable code.
type DeadLetterError struct {
	Code    envelope.Code
	Message string
}

func (e *DeadLetterError) Error() string { return string(e.Code) + ": " + e.Message }

// DeadLetter is one message of the stripe-eventbridge DLQ, read.
type DeadLetter struct {
	Shape DeadLetterShape
	// Event is the EventBridge event the rule delivered, to hand the
	// function again as it is.
	Event events.EventBridgeEvent
	// EventID and Type are the Stripe event's (detail.id, detail.type).
	EventID string
	Type    string
}

// failureRecord is the part of a Lambda asynchronous invocation record
// (an on-failure destination's message) the redrive reads.
type failureRecord struct {
	Version        string          `json:"version"`
	RequestContext json.RawMessage `json:"requestContext"`
	RequestPayload json.RawMessage `json:"requestPayload"`
}

// ReadDeadLetter reads a message body of the stripe-eventbridge DLQ in
// either shape. What it cannot read is a *DeadLetterError: such a
// message is nothing the function could take, and stays for an operator.
func ReadDeadLetter(body []byte) (DeadLetter, error) {
	var head map[string]json.RawMessage
	if err := json.Unmarshal(body, &head); err != nil || head == nil {
		return DeadLetter{}, &DeadLetterError{Code: CodeDeadLetterNotJSON, Message: "the message body is not a JSON object"}
	}
	dl := DeadLetter{Shape: ShapeRule}
	event := body
	if _, ok := head["requestPayload"]; ok {
		var rec failureRecord
		if err := json.Unmarshal(body, &rec); err != nil || rec.RequestContext == nil || !isObject(rec.RequestPayload) {
			return DeadLetter{}, &DeadLetterError{Code: CodeDeadLetterUnknownShape, Message: "a Lambda failure record without a requestContext or an object requestPayload"}
		}
		dl.Shape, event = ShapeFailureRecord, rec.RequestPayload
	}
	if err := json.Unmarshal(event, &dl.Event); err != nil || dl.Event.Source == "" || dl.Event.DetailType == "" {
		return DeadLetter{}, &DeadLetterError{Code: CodeDeadLetterUnknownShape, Message: fmt.Sprintf("neither an EventBridge event (source, detail-type, detail) nor a Lambda failure record of one (%s)", describe(err))}
	}
	if !strings.HasPrefix(dl.Event.Source, PartnerSourcePrefix) {
		return DeadLetter{}, &DeadLetterError{Code: CodeDeadLetterNotStripeSource, Message: fmt.Sprintf("source %q is not Stripe's partner event source (%s/…)", dl.Event.Source, PartnerSourcePrefix)}
	}
	var detail struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	}
	if !isObject(dl.Event.Detail) || json.Unmarshal(dl.Event.Detail, &detail) != nil || detail.ID == "" || detail.Type == "" {
		return DeadLetter{}, &DeadLetterError{Code: CodeDeadLetterNoStripeEvent, Message: "the event's detail is not a Stripe event with an id and a type"}
	}
	dl.EventID, dl.Type = detail.ID, detail.Type
	return dl, nil
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

func describe(err error) string {
	if err != nil {
		return err.Error()
	}
	return "a required member is missing"
}

// FailureRecord is the message Lambda's asynchronous invocation sends to
// an on-failure destination once its retries of ev are exhausted (the
// record of version 1.0: requestContext, requestPayload, responseContext,
// responsePayload), for the local stack and tests to put in a DLQ what
// AWS puts there.
func FailureRecord(ev events.EventBridgeEvent, functionARN, errorType, errorMessage string, attempts int, at time.Time) ([]byte, error) {
	payload, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{
		"version":   "1.0",
		"timestamp": at.UTC().Format("2006-01-02T15:04:05.000Z"),
		"requestContext": map[string]any{
			"requestId": ev.ID, "functionArn": functionARN + ":$LATEST",
			"condition": "RetriesExhausted", "approximateInvokeCount": attempts,
		},
		"requestPayload":  json.RawMessage(payload),
		"responseContext": map[string]any{"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
		"responsePayload": map[string]string{"errorType": errorType, "errorMessage": errorMessage},
	})
}
