package devstack

import (
	"context"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/siteswarm/eventplatform/internal/kit/afterward"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
)

// Function is one function of the local stack: its name (what the Lambda
// Invoke API addresses), its real handler, and the triggers that invoke it
// the way AWS would.
type Function struct {
	Name    string
	Handler any
	Timeout time.Duration
	// Triggers beyond the Lambda Invoke API, which every function gets.
	Triggers []lambdalocal.Trigger
}

// Registrar builds one or more functions from a starting stack (its
// resources, clients and settings). The catalog's functions have one
// (functions.go); the consumers have theirs (fn_consumers.go, fn_cachepurge.go).
type Registrar func(ctx context.Context, s *Stack) ([]Function, error)

var registrars []namedRegistrar

type namedRegistrar struct {
	name string
	r    Registrar
}

// register adds a registrar; name is for error messages.
func register(name string, r Registrar) {
	registrars = append(registrars, namedRegistrar{name, r})
}

// timed tells Options.Invoked of each invocation as it starts and ends.
type timed struct {
	name   string
	h      lambda.Handler
	report func(context.Context, string) (context.Context, func(time.Duration))
}

func (t timed) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	ctx, done := t.report(ctx, t.name)
	start := time.Now()
	defer func() {
		// An invocation ends (and is billed) when its work after the
		// answer is done too.
		if tasks := afterward.From(ctx); tasks != nil {
			go func() {
				tasks.Wait()
				done(time.Since(start))
			}()
			return
		}
		done(time.Since(start))
	}()
	return t.h.Invoke(ctx, payload)
}

// attributedHandler runs the handler with its calls attributed to the
// function (the cost meter's and the IAM recorder's seam): outermost, so
// a function invoked from another's goroutine (Step Functions, the event
// source mapping's poller) is still the callee.
type attributedHandler struct {
	name string
	h    lambda.Handler
}

func (a attributedHandler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return a.h.Invoke(attributed(ctx, a.name), payload)
}

func asHandler(h any) lambda.Handler {
	if lh, ok := h.(lambda.Handler); ok {
		return lh
	}
	return lambda.NewHandler(h)
}
