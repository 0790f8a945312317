package lambdainvoke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/smithy-go"

	"github.com/siteswarm/eventplatform/internal/envelope"
)

// DefaultTimeout bounds one ingest call, SDK retries included: well under
// API Gateway's 30 s integration limit, so a webhook answers 503 in time
// instead of API Gateway cutting it off with a bare 504.
const DefaultTimeout = 10 * time.Second

// MaxRequestPayload is Lambda's synchronous (RequestResponse) request
// payload limit, 6 MB: an Invoke with more fails before the function runs.
const MaxRequestPayload = 6 * 1024 * 1024

// Ingest invokes the ingest function with an envelope and decodes its
// result.
type Ingest struct {
	Client *lambda.Client
	// Function is the ingest function's ARN (or name).
	Function string
	// Timeout bounds each call (default DefaultTimeout).
	Timeout time.Duration
}

// Publish invokes ingest synchronously (RequestResponse). The payload is
// the envelope JSON; the answer is ingest's envelope.Result. Infrastructure
// failures before ingest commits are function errors there (the caller
// retries); nothing after the commit is lost, so every error here is safe
// to retry.
func (i *Ingest) Publish(ctx context.Context, payload []byte) (envelope.Result, error) {
	out, err := i.invoke(ctx, payload)
	if err != nil {
		return envelope.Result{}, err
	}
	var res envelope.Result
	if err := json.Unmarshal(out, &res); err != nil {
		return envelope.Result{}, &Error{Function: i.Function, Kind: KindBadResult, Message: "the result is not an ingest result", Err: err}
	}
	if !known(res.Status) {
		return envelope.Result{}, &Error{Function: i.Function, Kind: KindBadResult, Message: fmt.Sprintf("unknown result status %q", res.Status)}
	}
	return res, nil
}

// PublishBatch invokes ingest once with several envelopes (a JSON array of
// at most envelope.MaxBatch) and returns its result for each, in order
// (see ingest.Service.PublishBatch: an envelope an infrastructure failure
// kept from being stored carries Retry). The error is the call's: then
// nothing is known of any envelope, and sending them all again is safe.
func (i *Ingest) PublishBatch(ctx context.Context, envelopes [][]byte) ([]envelope.BatchResult, error) {
	if len(envelopes) == 0 {
		return nil, nil
	}
	payload := make([]byte, 0, 2+len(envelopes)*512)
	payload = append(payload, '[')
	for k, e := range envelopes {
		if k > 0 {
			payload = append(payload, ',')
		}
		payload = append(payload, e...)
	}
	payload = append(payload, ']')
	out, err := i.invoke(ctx, payload)
	if err != nil {
		return nil, err
	}
	var reply envelope.BatchReply
	if err := json.Unmarshal(out, &reply); err != nil || reply.Results == nil {
		// A single rejection answers a payload that is not a batch.
		var res envelope.Result
		if json.Unmarshal(out, &res) == nil && res.Error != nil {
			return nil, &Error{Function: i.Function, Kind: KindBadResult, Type: string(res.Error.Code), Message: res.Error.Message}
		}
		return nil, &Error{Function: i.Function, Kind: KindBadResult, Message: "the result is not an ingest batch result", Err: err}
	}
	if len(reply.Results) != len(envelopes) {
		return nil, &Error{Function: i.Function, Kind: KindBadResult, Message: fmt.Sprintf("%d results for %d envelopes", len(reply.Results), len(envelopes))}
	}
	for k, r := range reply.Results {
		if r.Retry == "" && !known(r.Status) {
			return nil, &Error{Function: i.Function, Kind: KindBadResult, Message: fmt.Sprintf("result %d: unknown result status %q", k, r.Status)}
		}
	}
	return reply.Results, nil
}

func known(s envelope.Status) bool {
	switch s {
	case envelope.StatusEnqueued, envelope.StatusDuplicate, envelope.StatusAccepted, envelope.StatusRejected, envelope.StatusUnrouted:
		return true
	}
	return false
}

// invoke calls ingest synchronously with payload and returns its answer;
// every failure is an *Error.
func (i *Ingest) invoke(ctx context.Context, payload []byte) ([]byte, error) {
	timeout := i.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := i.Client.Invoke(ctx, &lambda.InvokeInput{
		FunctionName:   aws.String(i.Function),
		InvocationType: lambdatypes.InvocationTypeRequestResponse,
		Payload:        payload,
	})
	if err != nil {
		kind, code := classify(ctx, err)
		return nil, &Error{Function: i.Function, Kind: kind, Type: code, Err: err}
	}
	if out.FunctionError != nil {
		var fe struct {
			Type    string `json:"errorType"`
			Message string `json:"errorMessage"`
		}
		_ = json.Unmarshal(out.Payload, &fe)
		kind := KindFunction
		if fe.Type == "Sandbox.Timedout" {
			kind = KindTimeout
		}
		return nil, &Error{Function: i.Function, Kind: kind, Type: fe.Type, Message: fe.Message}
	}
	return out.Payload, nil
}

// classify turns an Invoke API failure into a Kind and the service's
// error code.
func classify(ctx context.Context, err error) (Kind, string) {
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		return KindTimeout, ""
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		// No answer from the service at all (connection refused, reset):
		// transient by nature.
		return KindUnavailable, ""
	}
	code := ae.ErrorCode()
	if _, ok := retry.DefaultThrottleErrorCodes[code]; ok {
		return KindThrottled, code
	}
	switch code {
	case "ResourceNotReadyException", "ResourceConflictException":
		// The function is being created or updated: a deploy in progress.
		return KindUnavailable, code
	}
	if ae.ErrorFault() == smithy.FaultServer {
		return KindUnavailable, code
	}
	// Client faults (not found, access denied, request too large) are a
	// misconfiguration that retrying will not fix soon.
	return KindInvoke, code
}
