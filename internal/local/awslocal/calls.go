package awslocal

import (
	"context"
	"maps"
	"sync"

	"github.com/aws/smithy-go/middleware"
)

// Calls counts SDK operation calls by "Service.Operation" (e.g.
// "DynamoDB.TransactWriteItems"): how benchmarks and tests measure AWS API
// calls per event. It counts calls the code makes, at the Initialize step,
// so SDK retry attempts are not counted and a call failed by a Fault is
// (when Calls is attached before Faults, as NewEnv does). Safe for
// concurrent use.
type Calls struct {
	id     string
	mu     sync.Mutex
	counts map[string]int
}

// NewCalls returns a zeroed counter.
func NewCalls() *Calls {
	return &Calls{id: middlewareID("awslocal.Calls"), counts: map[string]int{}}
}

// APIOption is the middleware to append to a client's APIOptions.
func (c *Calls) APIOption(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc(c.id,
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			key := middleware.GetServiceID(ctx) + "." + middleware.GetOperationName(ctx)
			c.mu.Lock()
			c.counts[key]++
			c.mu.Unlock()
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}

// Count is the number of calls of one operation, e.g. ("SQS", "SendMessage").
func (c *Calls) Count(service, op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[service+"."+op]
}

// Total is the number of calls of every operation.
func (c *Calls) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.counts {
		n += v
	}
	return n
}

// Snapshot copies the counts, keyed "Service.Operation".
func (c *Calls) Snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

// Reset zeroes every count.
func (c *Calls) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.counts)
}
