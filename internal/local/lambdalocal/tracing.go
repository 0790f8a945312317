package lambdalocal

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/siteswarm/eventplatform/internal/observe/trace"
)

// lambdaTraceKey is where the Lambda Go runtime puts the invocation's
// trace header (the local invoke server does the same).
const lambdaTraceKey = "x-amzn-trace-id"

// traced records a segment per invocation named after the function,
// continuing the caller's trace: what Lambda's active tracing records for a
// deployed function. Only installed when tracing is on.
type traced struct {
	name string
	h    lambda.Handler
}

func (t traced) Invoke(ctx context.Context, payload []byte) (out []byte, err error) {
	upstream, _ := ctx.Value(lambdaTraceKey).(string)
	ctx, end := trace.Continue(ctx, t.name, upstream)
	defer func() { end(err) }() // a panicking handler still closes its segment
	if h := trace.Header(ctx); h != "" {
		// As in Lambda: the invocation's header names its own segment.
		ctx = context.WithValue(ctx, lambdaTraceKey, h) //nolint:staticcheck // the runtime's key
	}
	return t.h.Invoke(ctx, payload)
}

// WithTracing wraps a handler so each invocation records a trace segment
// named after the function (what Lambda's active tracing does), when
// tracing is on.
func WithTracing(name string, handler any) any {
	if !trace.Enabled() {
		return handler
	}
	h, ok := handler.(lambda.Handler)
	if !ok {
		h = lambda.NewHandler(handler)
	}
	return traced{name: name, h: h}
}
