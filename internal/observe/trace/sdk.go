package trace

import (
	"context"
	"errors"
	"net/http"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// headerName is the trace header AWS services read on a request.
const headerName = "X-Amzn-Trace-Id"

type callKey struct{}

// beginCall starts a subsegment per AWS call (named for the service, as
// X-Ray's service map expects) once the operation's metadata is known.
var beginCall = middleware.InitializeMiddlewareFunc("trace.AWSCall", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	c, s := begin(ctx, awsmiddleware.GetServiceID(ctx))
	if s == nil {
		return next.HandleInitialize(ctx, in)
	}
	s.namespace = "aws"
	s.aws = map[string]any{"operation": awsmiddleware.GetOperationName(ctx), "region": awsmiddleware.GetRegion(ctx)}
	c = context.WithValue(c, callKey{}, s)
	out, md, err := next.HandleInitialize(c, in)
	s.mu.Lock()
	if id, ok := awsmiddleware.GetRequestIDMetadata(md); ok {
		s.aws["request_id"] = id
	}
	if r, ok := retry.GetAttemptResults(md); ok && len(r.Results) > 1 {
		s.aws["retries"] = len(r.Results) - 1
	}
	var rid interface{ ServiceRequestID() string }
	if errors.As(err, &rid) && rid.ServiceRequestID() != "" {
		s.aws["request_id"] = rid.ServiceRequestID()
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		status := re.HTTPStatusCode()
		s.http = map[string]any{"response": map[string]any{"status": status}}
		switch {
		case status == http.StatusTooManyRequests:
			s.throttle, s.errored = true, true
		case status >= 400 && status < 500:
			s.errored = true
		}
		var ae smithy.APIError
		if errors.As(err, &ae) && (ae.ErrorCode() == "ThrottlingException" || ae.ErrorCode() == "ProvisionedThroughputExceededException") {
			s.throttle = true
		}
	}
	s.mu.Unlock()
	s.finish(err)
	return out, md, err
})

// propagate adds the call's trace header once the request is signed (the
// header is not part of the signature), so Lambda and SQS continue the
// trace; it records the response status.
var propagate = middleware.DeserializeMiddlewareFunc("trace.Propagate", func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
	s, _ := ctx.Value(callKey{}).(*span)
	if s == nil {
		return next.HandleDeserialize(ctx, in)
	}
	if req, ok := in.Request.(*smithyhttp.Request); ok {
		req.Header.Set(headerName, s.header().String())
	}
	out, md, err := next.HandleDeserialize(ctx, in)
	if resp, ok := out.RawResponse.(*smithyhttp.Response); ok {
		s.mu.Lock()
		s.http = map[string]any{"response": map[string]any{"status": resp.StatusCode, "content_length": resp.ContentLength}}
		s.mu.Unlock()
	}
	return out, md, err
})

func addMiddleware(stack *middleware.Stack) error {
	if err := stack.Initialize.Add(beginCall, middleware.After); err != nil {
		return err
	}
	return stack.Deserialize.Add(propagate, middleware.Before)
}
