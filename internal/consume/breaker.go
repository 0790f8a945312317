package consume

import (
	"context"
	"time"

	"github.com/siteswarm/eventplatform/internal/outbox"
)

// verdict is what a handler run said about the subscriber.
type verdict int8

const (
	noVerdict verdict = iota
	// answered: the subscriber took the message or refused it for good
	// (a 4xx is an answer: the subscriber is up).
	answered
	// unanswered: a transient failure (5xx, 429, timeout, connection
	// error, a handler panic).
	unanswered
)

// maxRequeueDelay is SQS's per-message delay limit (15 minutes).
const maxRequeueDelay = 15 * time.Minute

// judge records the handler's verdict on the subscriber.
func (it *item) judge(err error) {
	switch {
	case err == nil || IsPermanent(err):
		it.verdict = answered
	default:
		it.verdict, it.subscriberErr = unanswered, Redacted(err) // the health record and alerts never quote an answer
	}
}

// observe tells the breaker the batch's subscriber outcomes. A batch
// without a handler run (duplicates, claims refused) tells it nothing.
func (c *Consumer) observe(ctx context.Context, items []*item) {
	if c.d.Breaker == nil {
		return
	}
	var o Observation
	for _, it := range items {
		switch it.verdict {
		case answered:
			o.Answers++
		case unanswered:
			o.Failures++
			if o.LastError == "" {
				o.LastError = it.subscriberErr
			}
		}
	}
	if o.Failures == 0 && o.Answers == 0 {
		return
	}
	c.d.Breaker.Observe(ctx, o)
}

// hold keeps a message whose last attempt failed transiently out of the
// DLQ while the topic's breaker holds its messages: the subscriber is down,
// not the message, so the message waits for the probe instead of becoming
// an incident. Only a subscriber failure is held (a claim or payload
// failure goes the usual way), and only when the breaker says so; a
// breaker that cannot be read leaves the message to the usual path.
//
// On a standard queue the message's receive count is at the redrive
// policy's limit by then, and SQS would move it to the DLQ on its next
// receive: a fresh copy is sent (its count starts again) and the original
// acknowledged. A FIFO message is delayed in place (a copy would go to the
// back of its group): its queue's redrive limit is several times its
// attempts (topology.Topic.RedriveMaxReceiveCount), and while the breaker
// is open nothing receives it.
func (c *Consumer) hold(it *item, f *failure) bool {
	if c.d.Breaker == nil || it.verdict != unanswered {
		return false
	}
	h, err := c.d.Breaker.Hold(it.ctx)
	if err != nil {
		c.d.Log.WarnContext(it.ctx, "consume: could not read the topic's breaker; the message goes the usual way", "error", err)
		return false
	}
	if !h.Holding {
		return false
	}
	now := c.d.Now()
	d := c.cfg.Backoff.Delay(it.msg.Attempt, f.retryAfter)
	if h.Until.After(now) {
		d = max(d, h.Until.Sub(now).Round(time.Second))
	}
	d = min(d, c.cfg.Backoff.limit())
	it.held = true
	if !c.cfg.Topic.FIFO && it.msg.ReceiveCount >= c.cfg.Topic.RedriveMaxReceiveCount() {
		err := c.d.Queue.Requeue(it.ctx, it.rec, min(d, maxRequeueDelay))
		if err == nil {
			it.outcome, it.fail = requeued, f
			c.release(it, f, outbox.OutcomeHeld, now.Add(min(d, maxRequeueDelay)), now)
			c.d.Log.InfoContext(it.ctx, "consume: the breaker holds the topic; re-queued a fresh copy instead of dead-lettering", "receiveCount", it.msg.ReceiveCount, "delay", min(d, maxRequeueDelay).String(), "error", f.logged)
			return true
		}
		c.d.Log.WarnContext(it.ctx, "consume: the breaker holds the topic but the copy could not be sent; SQS may dead-letter the message on its next receive (its incident replays it)", "error", err)
	}
	it.outcome, it.delay, it.fail = retried, d, f
	c.release(it, f, outbox.OutcomeHeld, now.Add(d), now)
	c.d.Log.InfoContext(it.ctx, "consume: the breaker holds the topic; delayed instead of dead-lettering", "attempt", it.msg.Attempt, "delay", d.String(), "error", f.logged)
	return true
}
