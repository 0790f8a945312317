package afterward

import (
	"context"
	"sync"
)

// Tasks is the work one invocation started to finish after its answer.
// The zero value is ready to use.
type Tasks struct {
	wg sync.WaitGroup
}

// New returns an empty set of tasks for one invocation.
func New() *Tasks { return &Tasks{} }

// Wait blocks until every task started so far has returned.
func (t *Tasks) Wait() { t.wg.Wait() }

type tasksKey struct{}

type afterKey struct{}

// With returns ctx carrying t: Go with the returned context (or one
// derived from it) adds its work to t.
func With(ctx context.Context, t *Tasks) context.Context {
	return context.WithValue(ctx, tasksKey{}, t)
}

// From is the tasks ctx carries (nil: none).
func From(ctx context.Context) *Tasks {
	t, _ := ctx.Value(tasksKey{}).(*Tasks)
	return t
}

// After reports whether ctx is the context of work running after its
// invocation's answer (Go's): the cost meter keeps such calls off the
// invocation's answer.
func After(ctx context.Context) bool {
	after, _ := ctx.Value(afterKey{}).(bool)
	return after
}

// Go runs work after the answer of the invocation ctx belongs to: at once
// in its own goroutine when ctx carries Tasks (the invocation's runtime
// waits for them before the environment may freeze), otherwise right here
// before Go returns, which is what a caller with no such runtime (a test,
// the sweeper, a process that could not register its extension) must get.
//
// work gets a context with ctx's values (its logger, trace and cost labels
// included), marked After, that is not cancelled when the handler returns
// (the Lambda Go runtime cancels the handler's context then) but keeps
// ctx's deadline: the invocation's, which bounds the work too.
func Go(ctx context.Context, work func(context.Context)) {
	actx := context.WithValue(context.WithoutCancel(ctx), afterKey{}, true)
	cancel := context.CancelFunc(func() {})
	if d, ok := ctx.Deadline(); ok {
		actx, cancel = context.WithDeadline(actx, d)
	}
	t := From(ctx)
	if t == nil {
		defer cancel()
		work(actx)
		return
	}
	t.wg.Go(func() {
		defer cancel()
		work(actx)
	})
}
