package consume

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/siteswarm/eventplatform/internal/kit/bounded"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// Consumer is one topic's consumer: Handle is its Lambda handler. New
// builds it.
type Consumer struct {
	cfg Config
	d   Deps
}

// outcome of one message.
type outcome int

const (
	pending   outcome = iota
	completed         // handler succeeded: acknowledge
	duplicate         // completed earlier: acknowledge without running
	retried           // reported as a batch item failure
	poisoned          // in the DLQ: acknowledge
	requeued          // held by the breaker, sent back as a fresh copy: acknowledge
	carried           // handler succeeded, its completion sent on in a copy: acknowledge
	copyDone          // a copy carrying a completion, done with: acknowledge
)

// item is one record's progress through the runtime.
type item struct {
	rec     events.SQSMessage
	ctx     context.Context
	end     func(error)
	msg     Message
	claimed bool
	outcome outcome
	// delay is the visibility delay of a retried item.
	delay time.Duration
	// fail is the failure that decided a retried or poisoned outcome.
	fail *failure
	// ran reports that the handler ran; took is how long.
	ran  bool
	took time.Duration
	// deadline is the invocation's: the completion write may retry
	// until shortly before it.
	deadline time.Time
	// held: the breaker kept this failed message from the DLQ.
	held bool
	// carried: the item's completion was sent on in a copy (carry).
	carried bool
	// verdict is what the handler's run said about the subscriber, and
	// subscriberErr its transient failure.
	verdict       verdict
	subscriberErr string
	// log, claimedAt and delivery describe the attempt the claim began
	// (the record its outcome write appends); note is what the handler
	// noted about it.
	log       outbox.AttemptLog
	claimedAt time.Time
	delivery  outbox.Delivery
	note      *note
}

// Handle is the Lambda handler of an SQS event source mapping with
// ReportBatchItemFailures. It reports exactly the records to redeliver,
// never an empty or unknown identifier. It returns an error (the whole
// batch is retried) only when a record has no message id and cannot be
// moved to the DLQ.
func (c *Consumer) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	start := c.d.Now()
	deadline, ok := ctx.Deadline()
	if !ok {
		timeout := c.cfg.Topic.ConsumerTimeout
		if timeout <= 0 {
			timeout = 30 * time.Second
		}
		deadline = start.Add(timeout)
	}
	items := make([]*item, len(ev.Records))
	for i, rec := range ev.Records {
		items[i] = &item{rec: rec, ctx: ctx, end: func(error) {}, deadline: deadline}
	}
	var fatal error
	if c.d.Batch != nil {
		c.runBatch(ctx, items, deadline)
	} else {
		c.runEach(ctx, items, deadline)
	}
	c.observe(ctx, items)
	c.delay(ctx, items)
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	seen := map[string]bool{}
	for _, it := range items {
		c.record(it)
		if it.outcome != retried {
			continue
		}
		if it.rec.MessageId == "" {
			fatal = errors.New("consume: a record without a message id could not be dead-lettered; failing the batch so nothing is lost")
			continue
		}
		if !seen[it.rec.MessageId] {
			seen[it.rec.MessageId] = true
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: it.rec.MessageId})
		}
	}
	c.summarize(ctx, items, start)
	if fatal != nil {
		return events.SQSEventResponse{}, fatal
	}
	return resp, nil
}

// lanes splits the batch into independently processed sequences: one per
// message on a standard queue, one per message group (in delivery order) on
// a FIFO queue.
func (c *Consumer) lanes(items []*item) [][]*item {
	if !c.cfg.Topic.FIFO {
		out := make([][]*item, len(items))
		for i, it := range items {
			out[i] = []*item{it}
		}
		return out
	}
	var out [][]*item
	index := map[string]int{}
	for _, it := range items {
		g := it.rec.Attributes[sysGroupID]
		i, ok := index[g]
		if !ok {
			i = len(out)
			index[g] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], it)
	}
	return out
}

// eachLane runs fn on every lane with bounded concurrency.
func (c *Consumer) eachLane(lanes [][]*item, fn func(lane []*item)) {
	c.each(len(lanes), func(i int) { fn(lanes[i]) })
}

// each runs fn(0..n-1) with bounded concurrency.
func (c *Consumer) each(n int, fn func(i int)) {
	limit := c.cfg.Concurrency
	if limit <= 0 {
		limit = DefaultConcurrency
	}
	bounded.Each(n, limit, fn)
}

// walk processes a lane in order: after the first message that has to be
// retried, the rest of the lane is retried with it, unprocessed, so a FIFO
// group keeps its order. Poison does not stop a lane.
func walk(lane []*item, step func(it *item)) {
	var blocked *item
	for _, it := range lane {
		if blocked != nil {
			block(it, blocked)
			continue
		}
		step(it)
		if it.outcome == retried {
			blocked = it
		}
	}
}

// block retries it, unprocessed, behind the earlier message of its lane
// that is being retried.
func block(it, blocked *item) {
	it.outcome, it.delay = retried, blocked.delay
	it.fail = transient("an earlier message of group %q is being retried", it.rec.Attributes[sysGroupID])
	it.fail.benign = true
}

// runEach runs the per-message Handler.
func (c *Consumer) runEach(ctx context.Context, items []*item, deadline time.Time) {
	c.eachLane(c.lanes(items), func(lane []*item) {
		walk(lane, func(it *item) {
			if !c.prepare(ctx, it, deadline) {
				return
			}
			hctx, cancel := c.handlerContext(it.noting(it.ctx), deadline)
			err := c.call(hctx, it, func(ctx context.Context) error { return c.d.Handler.Handle(ctx, it.msg) })
			cancel()
			c.finish(it, err)
		})
	})
}

// runBatch admits every message it can (claim and rehydrate, in group
// order on FIFO), runs the BatchHandler once on the admitted ones, then
// records each outcome.
func (c *Consumer) runBatch(ctx context.Context, items []*item, deadline time.Time) {
	c.admitBatch(ctx, items, deadline)
	// Delivery order: the handler sees a FIFO group in sequence.
	var ready []*item
	for _, it := range items {
		if it.claimed && it.outcome == pending {
			ready = append(ready, it)
		}
	}
	if len(ready) == 0 {
		return
	}
	msgs := make([]Message, len(ready))
	for i, it := range ready {
		msgs[i] = it.msg
	}
	hctx, cancel := c.handlerContext(ctx, deadline)
	var errs []error
	started := c.d.Now()
	func() {
		defer func() {
			if r := recover(); r != nil {
				c.d.Log.ErrorContext(ctx, "consume: batch handler panicked", "topic", c.cfg.Topic.Name, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				errs = make([]error, len(ready))
				for i := range errs {
					errs[i] = fmt.Errorf("batch handler panicked: %v", r)
				}
			}
		}()
		errs = c.d.Batch.HandleBatch(hctx, msgs)
	}()
	cancel()
	took := c.d.Now().Sub(started)
	if errs != nil && len(errs) != len(ready) {
		// A handler bug; nothing can be assumed done.
		err := fmt.Errorf("batch handler returned %d results for %d messages", len(errs), len(ready))
		c.d.Log.ErrorContext(ctx, "consume: "+err.Error(), "topic", c.cfg.Topic.Name)
		errs = make([]error, len(ready))
		for i := range errs {
			errs[i] = err
		}
	}
	for _, it := range ready {
		it.ran, it.took = true, took
	}
	if errs == nil {
		errs = make([]error, len(ready))
	}
	batched := c.completeBatch(ctx, ready, errs)
	var wg sync.WaitGroup
	for i, it := range ready {
		wg.Go(func() { c.finishWith(it, errs[i], batched[i]) })
	}
	wg.Wait()
}

// call runs one handler invocation, timing it and turning a panic into a
// transient failure (a panic must not crash the batch's other messages).
func (c *Consumer) call(ctx context.Context, it *item, fn func(context.Context) error) (err error) {
	started := c.d.Now()
	defer func() {
		it.ran, it.took = true, c.d.Now().Sub(started)
		if r := recover(); r != nil {
			c.d.Log.ErrorContext(ctx, "consume: handler panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("handler panicked: %v", r)
		}
	}()
	return fn(ctx)
}

// handlerContext ends the handler's work shortly before the Lambda
// deadline, leaving time to record the outcome.
func (c *Consumer) handlerContext(ctx context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	margin := min(2*time.Second, deadline.Sub(c.d.Now())/10)
	return context.WithDeadline(ctx, deadline.Add(-max(margin, 0)))
}

// ownerLost is logged, not failed: the message was handled.
func isLeaseLost(err error) bool { return errors.Is(err, outbox.ErrLeaseLost) }
