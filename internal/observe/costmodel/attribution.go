package costmodel

import "context"

// The attribution seam: the local stack marks the context of each function
// invocation (and of the work Lambda does for a function: its event source
// mapping's receives and deletes, its cold start) with the function's
// name, and an SDK middleware that wants to know whose call it sees reads
// it back. The meter prices a path's calls by function with it; the IAM
// recorder (internal/observe/iamcalls) checks each call against the
// function's role with it. One seam, so a call the meter attributes is a
// call the IAM check judges.

type functionKey struct{}

// Attribute returns ctx with the calls made with it attributed to
// function (the local function name, "consumer-billing-events").
func Attribute(ctx context.Context, function string) context.Context {
	return context.WithValue(ctx, functionKey{}, function)
}

// FunctionOf is the function ctx's calls are attributed to (Attribute, or
// Meter.Begin), "" for none: the test harness's own calls, provisioning.
func FunctionOf(ctx context.Context) string {
	if fn, ok := ctx.Value(functionKey{}).(string); ok {
		return fn
	}
	return ""
}
