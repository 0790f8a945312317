package awslocaltest

import (
	"context"
	"sync"

	"github.com/aws/smithy-go/middleware"
)

// Hook runs Do once, at an exact point of the code under test: around the
// first call of Operation (of Service: smithy service IDs as Fault names
// them) whose input Match accepts (nil: any), before the call is made or
// after it returned. A test interleaves a concurrent actor there (an
// erasure completing between a read and the write that follows it) with
// the code's real clients; the hook's own calls go through clients
// without it. Add it to a client's APIOptions.
type Hook struct {
	Service, Operation string
	Match              func(input any) bool
	// Before runs Do before the call instead of after it.
	Before bool
	Do     func()
	// Err, with Before, fails the call with it after Do instead of making
	// it (the send that fails while the actor ran).
	Err error

	once sync.Once
	ran  bool
	mu   sync.Mutex
}

// Ran reports whether Do has run.
func (h *Hook) Ran() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ran
}

// APIOption is the middleware to append to a client's APIOptions.
func (h *Hook) APIOption(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("awslocaltest.Hook", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		hit := middleware.GetServiceID(ctx) == h.Service && middleware.GetOperationName(ctx) == h.Operation && (h.Match == nil || h.Match(in.Parameters))
		if hit && h.Before {
			first := h.run()
			if first && h.Err != nil {
				return middleware.InitializeOutput{}, middleware.Metadata{}, h.Err
			}
		}
		out, md, err := next.HandleInitialize(ctx, in)
		if hit && !h.Before {
			h.run()
		}
		return out, md, err
	}), middleware.After)
}

// run runs Do the first time; first is true for that call.
func (h *Hook) run() (first bool) {
	h.once.Do(func() {
		first = true
		h.Do()
		h.mu.Lock()
		h.ran = true
		h.mu.Unlock()
	})
	return first
}
