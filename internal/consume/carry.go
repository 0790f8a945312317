package consume

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/siteswarm/eventplatform/internal/outbox"
)

// A completion that cannot be written within the invocation (the events
// table throttled past completeDurably's budget) must neither be lost nor
// let the side effect run again. The row's lease ends with the invocation;
// acknowledging the message left the row processing for the sweeper to
// settle, and any later delivery of the message (an SQS duplicate, a
// delete that failed) found the lease lapsed and ran the side effect a
// second time. Reporting the message for redelivery instead would run it
// again for sure: when it came back, nothing would tell a handler that ran
// from one that crashed.
//
// So the completion stays on the queue: the consumer sends a copy of the
// message marked completionOf "<hop>/<owner>" (the lease owner's message
// id), invisible for a short delay, and acknowledges the original. The
// copy's receiver never runs the handler: it records the owner's
// completion (MarkCompleted as the owner: the row must still be
// processing under that lease, so a row that moved on is left alone), and
// if that fails too it carries the completion on in a further copy, up to
// maxCompletionHops, after which the sweeper settles the row as before. A
// delivery of the original that arrives after the copy landed finds the
// row completed and is acknowledged without running.
//
// FIFO topics keep acknowledging (a copy would queue behind its group and
// SQS has no per-message delay there); the sweeper settles their rows.

// maxCompletionHops bounds how many copies carry one completion (with
// the topic's backoff between them: 5 s doubling, about 21 minutes at
// the defaults, within the sweeper's 45-minute settle delay).
const maxCompletionHops = 8

// copyLanding is how long a copy takes from becoming visible to its
// completion being written (a receive, an invocation, one write): a busy
// message waits that much longer than the first copy's delay.
const copyLanding = 2 * time.Second

// completionMark is the value of a copy's completionOf attribute.
func completionMark(hop int, owner string) string { return strconv.Itoa(hop) + "/" + owner }

// parseCompletionMark reads a completionOf value strictly.
func parseCompletionMark(v string) (owner string, hop int, err error) {
	h, owner, ok := strings.Cut(v, "/")
	hop, herr := strconv.Atoi(h)
	switch {
	case !ok || herr != nil || h != strconv.Itoa(hop) || hop < 1 || hop > maxCompletionHops:
		return "", 0, fmt.Errorf("completionOf %q: not <hop 1..%d>/<message id>", v, maxCompletionHops)
	case owner == "" || len(owner) > 128 || strings.ContainsFunc(owner, func(r rune) bool { return r <= ' ' || r == '/' || r > '~' }):
		return "", 0, fmt.Errorf("completionOf %q: not a message id", v)
	}
	return owner, hop, nil
}

// carriedAttempt is the delivery attempt a carried completion records
// (AttrCompletionAttempt): the attempt without the subscriber's answer,
// and its number (the copy appends it to the row's attempts).
type carriedAttempt struct {
	Attempt outbox.Attempt  `json:"attempt"`
	Lost    *outbox.Attempt `json:"lost,omitempty"`
	// Log is not sent: it holds the row's earlier answers.
	Log outbox.AttemptLog `json:"-"`
}

// encode is the attribute's value ("" when there is no attempt).
func (a carriedAttempt) encode() string {
	if a.Attempt.N == 0 {
		return ""
	}
	a.Attempt.Answer, a.Lost = "", a.Log.Lost
	b, err := json.Marshal(a)
	if err != nil {
		return ""
	}
	return string(b)
}

// decodeCarried reads an AttrCompletionAttempt value; a malformed one is
// no attempt (the completion still lands).
func decodeCarried(v string) carriedAttempt {
	var a carriedAttempt
	if v == "" || json.Unmarshal([]byte(v), &a) != nil || a.Attempt.N < 1 {
		return carriedAttempt{}
	}
	a.Attempt.Answer = ""
	a.Attempt.Duration = time.Duration(a.Attempt.DurationMs) * time.Millisecond
	a.Log = outbox.AttemptLog{Next: a.Attempt.N, Lost: a.Lost}
	return a
}

// carry sends the item's completion on in a copy of its message (see
// above) and reports whether it did; the caller acknowledges the item.
func (c *Consumer) carry(it *item, owner string, hop int, cause error, a carriedAttempt) bool {
	if c.cfg.Topic.FIFO {
		c.d.Log.ErrorContext(it.ctx, "consume: handled, but the completion could not be written; acknowledging so the side effect is not repeated (the sweeper settles the row)", "error", cause)
		return false
	}
	if hop > maxCompletionHops {
		c.d.Log.ErrorContext(it.ctx, "consume: a carried completion still could not be written; acknowledging (the sweeper settles the row)",
			"owner", owner, "hops", hop-1, "error", cause)
		return false
	}
	m := it.rec
	m.MessageAttributes = maps.Clone(it.rec.MessageAttributes)
	if m.MessageAttributes == nil {
		m.MessageAttributes = map[string]events.SQSMessageAttribute{}
	}
	mark := completionMark(hop, owner)
	m.MessageAttributes[outbox.AttrCompletionOf] = events.SQSMessageAttribute{DataType: "String", StringValue: &mark}
	if v := a.encode(); v != "" {
		m.MessageAttributes[outbox.AttrCompletionAttempt] = events.SQSMessageAttribute{DataType: "String", StringValue: &v}
	}
	d := min(c.cfg.Backoff.Delay(hop, 0), maxRequeueDelay)
	if err := c.d.Queue.Requeue(it.ctx, m, d); err != nil {
		c.d.Log.ErrorContext(it.ctx, "consume: handled, but neither the completion nor a copy carrying it could be written; acknowledging (the sweeper settles the row)",
			"error", cause, "copyError", err)
		return false
	}
	it.carried = true
	c.d.Log.WarnContext(it.ctx, "consume: handled, but the completion could not be written; a copy of the message carries it (the handler does not run again)",
		"owner", owner, "hop", hop, "delay", d.String(), "error", cause)
	return true
}

// land is the runtime for a copy that carries a completion: record it as
// its owner, never run the handler.
func (c *Consumer) land(it *item, mark string) {
	owner, hop, err := parseCompletionMark(mark)
	if err != nil {
		c.poison(it, poison(CodeInvalidMessage, "%v", err))
		return
	}
	it.outcome = copyDone
	a := decodeCarried(attr(it.rec, outbox.AttrCompletionAttempt))
	err = c.completeDurably(it, owner, a.Attempt, a.Log)
	switch {
	case err == nil:
		c.d.Log.DebugContext(it.ctx, "consume: carried completion recorded", "owner", owner, "hop", hop)
		if aerr := c.attest(it); aerr != nil {
			// The replay's incident stays retrying; the stuck-replay
			// check reopens it, and replaying it again attests.
			c.d.Log.WarnContext(it.ctx, "consume: carried completion recorded, replay attestation failed", "error", aerr)
		}
	case isLeaseLost(err):
		c.d.Log.DebugContext(it.ctx, "consume: carried completion not needed: the row moved on (completed, settled or taken over)", "owner", owner, "hop", hop)
	default:
		c.carry(it, owner, hop+1, err, a)
	}
}
