package devstack

import (
	"context"
	"time"
)

// Function is one function of the local stack: its name (what the Lambda
// Invoke API addresses), its real handler, and the triggers that invoke it
// the way AWS would.
type Function struct {
	Name    string
	Handler any
	Timeout time.Duration
	// Triggers beyond the Lambda Invoke API, which every function gets.
	Triggers []Trigger
}

// Trigger is an event source of a local function.
type Trigger interface{ trigger() }

// HTTPRoute serves Method Path on the stack's address; each request is
// converted to the API Gateway HTTP API (payload format 2.0) event the
// deployed function receives. Path may hold net/http wildcards
// ("/admin/events/{eventId}"); they become pathParameters.
type HTTPRoute struct {
	Method string
	Path   string
}

func (HTTPRoute) trigger() {}

// Registrar builds one or more functions from a starting stack (its
// resources, clients and settings). Each function's file in this package
// adds its registrar in an init function, so adding a function to the local
// stack is one registration and never touches the stack's machinery.
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

// QueueSource is an SQS event source mapping: a poller receives batches of
// up to BatchSize messages (waiting up to BatchWindow to fill one), invokes
// the function with an events.SQSEvent, and deletes only the messages not
// reported in batchItemFailures (ReportBatchItemFailures). Failed messages
// stay in flight until their visibility timeout, so redrive to the DLQ
// happens exactly as in AWS.
type QueueSource struct {
	QueueURL    string
	QueueARN    string
	BatchSize   int
	BatchWindow time.Duration
	// MaxConcurrency bounds concurrent invocations (default 2).
	MaxConcurrency int
}

func (QueueSource) trigger() {}

// Schedule invokes the function every Every with an EventBridge scheduled
// event (events.EventBridgeEvent, detail-type "Scheduled Event").
type Schedule struct {
	Every time.Duration
}

func (Schedule) trigger() {}
