package lambdalocal

import "github.com/aws/aws-lambda-go/lambda"

// invocationHandler returns a handler private to one invocation.
//
// aws-lambda-go's reflective handler encodes the response into a pooled
// buffer and, in Invoke, returns that buffer's bytes after handing the buffer
// back to its pool: with concurrent invocations of one function (which the
// Lambda runtime never does in one process, but the local stack does) a
// second invocation can overwrite the first one's response. A fresh handler
// has a fresh pool; the caller copies the bytes out before returning.
func (fn *function) invocationHandler() lambda.Handler {
	if h, ok := fn.raw.(lambda.Handler); ok {
		return h
	}
	return lambda.NewHandler(fn.raw)
}
