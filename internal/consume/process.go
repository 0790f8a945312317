package consume

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/kit/truncate"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// CodeInvalidMessage: a record without a message id (never sent by SQS;
// a hand-built event).
const CodeInvalidMessage = "invalid_message"

// sysTraceHeader is the X-Ray trace header SQS carries for the producer.
const sysTraceHeader = "AWSTraceHeader"

// prepare takes a record as far as the handler: parse, claim the outbox
// row, rehydrate the payload. It returns true when the handler should run;
// otherwise the item's outcome is decided.
func (c *Consumer) prepare(ctx context.Context, it *item, deadline time.Time) bool {
	p, ok := c.admit(ctx, it, deadline)
	if !ok {
		return false
	}
	claim, err := c.d.Rows.BeginProcessing(it.ctx, p)
	return c.admitted(it, claim, err, p.Now)
}

// admit is prepare before the claim: it parses the record and returns the
// claim to request, or false when the item's outcome is decided without
// one (poison, a copy carrying a completion). runBatch claims the
// requests of a whole batch at once (BatchRows) between admit and
// admitted.
func (c *Consumer) admit(ctx context.Context, it *item, deadline time.Time) (Processing, bool) {
	it.ctx = logging.With(ctx, "messageId", it.rec.MessageId, logging.KeyTopic, c.cfg.Topic.Name)
	if c.d.Trace != nil {
		it.ctx, it.end = c.d.Trace(it.ctx, "consume "+c.cfg.Topic.Name, it.rec.Attributes[sysTraceHeader])
	}
	if it.rec.MessageId == "" {
		c.poison(it, poison(CodeInvalidMessage, "record has no message id"))
		return Processing{}, false
	}
	msg, f := parse(it.rec, c.cfg.Topic.Name)
	it.msg = msg
	if msg.Event.ID != "" {
		it.ctx = logging.WithEvent(it.ctx, logging.Event{ID: msg.Event.ID, TenantID: msg.Event.TenantID, Source: msg.Event.Source, Type: msg.Event.Type})
		if msg.ReplayOf != "" {
			it.ctx = logging.With(it.ctx, logging.KeyIncident, msg.ReplayOf)
		}
	}
	if f != nil {
		c.poison(it, f)
		return Processing{}, false
	}
	if mark, ok := attrOK(it.rec, outbox.AttrCompletionOf); ok {
		c.land(it, mark) // a copy carrying a completion (carry.go)
		return Processing{}, false
	}
	if c.cfg.Topic.FIFO {
		// Unknown until the claim counts it: a FIFO message's receive
		// count says nothing about its attempts.
		it.msg.Attempt = 0
	}
	return Processing{
		Row: it.row(c.cfg.Topic.Name), EventID: msg.Event.ID, TenantID: msg.Event.TenantID, Type: msg.Event.Type,
		Owner: it.rec.MessageId, Until: deadline, Now: c.d.Now(),
	}, true
}

// admitted is prepare after the claim: it acts on the claim's answer
// (requested at now) and rehydrates the payload of a claimed message. It
// returns true when the handler should run.
func (c *Consumer) admitted(it *item, claim Claim, err error, now time.Time) bool {
	msg := it.msg
	if err != nil {
		c.retry(it, transient("claim the outbox row: %v", err))
		return false
	}
	switch claim.State {
	case LedgerMissing:
		c.poison(it, poison(CodeLedgerMissing, "event %s has no ledger item (past its retention, or never accepted): replay its incident to restore it", msg.Key))
		return false
	case Erased:
		// Still in flight when the subject was erased (a retry, a
		// redelivery, a replay sent before): the body holds the erased
		// payload, so it is neither delivered nor dead-lettered.
		it.outcome = duplicate
		c.d.Log.InfoContext(it.ctx, "consume: the event's subject was erased; acknowledged without delivering", "receiveCount", msg.ReceiveCount)
		return false
	case AlreadyCompleted:
		// A redelivery (or an SQS duplicate) of a message whose side effect
		// happened: acknowledge without running the handler. A replay still
		// attests, so a lost attestation heals on redelivery.
		if err := c.attest(it); err != nil {
			c.retry(it, transient("attest replay of %s: %v", msg.ReplayOf, err))
			return false
		}
		it.outcome = duplicate
		c.d.Log.InfoContext(it.ctx, "consume: already completed; acknowledged without running the handler", "receiveCount", msg.ReceiveCount)
		return false
	case Busy:
		// Another delivery is running the handler. Come back when its lease
		// ends: by then it completed (we ack) or died (we take over). On a
		// standard topic also after a copy carrying its completion
		// (carry.go), sent before the lease ended and invisible for up to
		// the first backoff, had time to land: a message back before it
		// would take over the lapsed lease and run the side effect again.
		wait := time.Second
		if !c.cfg.Topic.FIFO {
			wait += c.cfg.Backoff.base() + copyLanding
		}
		d := min(max(claim.LeaseUntil.Sub(now)+wait, time.Second), c.cfg.Backoff.limit())
		it.outcome, it.delay = retried, d
		it.fail = transient("another delivery holds the row until %s", claim.LeaseUntil.UTC().Format(time.RFC3339))
		it.fail.benign = true
		c.d.Log.InfoContext(it.ctx, "consume: in progress elsewhere; retrying after its lease", "leaseUntil", claim.LeaseUntil, "delay", d.String())
		return false
	}
	it.claimed = true
	it.log, it.claimedAt = claim.Log, now
	if c.cfg.Topic.FIFO {
		it.msg.Attempt = max(claim.Attempt, 1)
	}
	c.deliveryKind(it)
	if f := c.rehydrate(it); f != nil {
		c.fail(it, f)
		return false
	}
	return true
}

// rehydrate replaces a claim-check reference with the verified payload.
func (c *Consumer) rehydrate(it *item) *failure {
	ref := it.msg.Event.PayloadRef
	if ref == nil {
		return nil
	}
	body, err := c.d.Payloads.Get(it.ctx, ref.Bucket, ref.Key)
	if err != nil {
		f := transient("fetch claim-checked payload s3://%s/%s: %v", ref.Bucket, ref.Key, err)
		f.class = "payload_unavailable"
		return f
	}
	if got := envelope.SHA256Hex(body); got != ref.SHA256 || len(body) != ref.Size {
		return poison(CodePayloadCorrupt, "claim-checked payload s3://%s/%s is corrupt: sha256 %s size %d, want %s size %d", ref.Bucket, ref.Key, got, len(body), ref.SHA256, ref.Size)
	}
	it.msg.Event.Payload, it.msg.Event.PayloadRef = body, nil
	return nil
}

// finish records the handler's outcome for a claimed item.
func (c *Consumer) finish(it *item, err error) { c.finishWith(it, err, nil) }

// finishWith is finish after the completion was written already (batched
// is its result: nil for success or outbox.ErrLeaseLost; see
// completeBatch); with batched nil it writes the completion itself.
func (c *Consumer) finishWith(it *item, err error, batched *error) {
	it.judge(err)
	if err != nil {
		c.fail(it, failureOf(err))
		return
	}
	if batched != nil {
		err = *batched
	} else {
		err = c.completeDurably(it, it.rec.MessageId, it.attempt(outbox.OutcomeDelivered, nil), it.log)
	}
	switch {
	case err == nil:
	case isLeaseLost(err):
		c.d.Log.WarnContext(it.ctx, "consume: handled, but the row was taken over meanwhile (the lease expired before completion)")
	case c.carry(it, it.rec.MessageId, 1, err, carriedAttempt{Attempt: it.attempt(outbox.OutcomeDelivered, nil), Log: it.log}):
		// The side effect happened and a copy carries its completion
		// (carry.go); the copy attests a replay once it lands.
		it.claimed, it.outcome = false, carried
		return
	default:
		// No copy either: acknowledging is the lesser evil, a retry would
		// repeat the side effect once the lease expires. The row stays
		// processing until the sweeper settles it.
	}
	it.claimed = false
	if err := c.attest(it); err != nil {
		// Completed and recorded: only the attestation is missing. The
		// redelivery finds the row completed and attests again.
		it.outcome, it.delay = retried, c.cfg.Backoff.Delay(1, 0)
		it.fail = transient("attest replay of %s: %v", it.msg.ReplayOf, err)
		c.d.Log.WarnContext(it.ctx, "consume: handled, replay attestation failed; retrying the attestation", "error", err)
		return
	}
	it.outcome = completed
	c.d.Log.DebugContext(it.ctx, "consume: completed", "receiveCount", it.msg.ReceiveCount, "took", it.took.String())
}

// fail routes a failure of a claimed (or unclaimable) item.
func (c *Consumer) fail(it *item, f *failure) {
	if f.kind == KindPermanent {
		c.poison(it, f)
		return
	}
	c.retry(it, f)
}

// retry reports the item for redelivery after its backoff and hands the row
// back with lastError.
//
// On the message's last receive (maxReceiveCount) it is dead-lettered now,
// with why: SQS would only redrive it after the backoff — minutes at the
// last attempts, up to the cap — so its incident would open that much
// later, and a message the subscriber could take again by then would still
// end in the DLQ. A benign retry (another delivery holds the row) is left
// to SQS.
//
// On a FIFO topic "last" counts the message's attempts (Message.Attempt),
// not its receives: the messages behind a failing one of their group were
// received as often without being attempted, and each gets its own
// maxReceiveCount attempts, in order, once it is at the front.
func (c *Consumer) retry(it *item, f *failure) {
	if last := c.cfg.Topic.MaxReceiveCount; !f.benign && last > 0 && it.msg.Attempt >= last {
		if c.hold(it, f) {
			return
		}
		gaveUp := fmt.Sprintf("gave up after %d %s; last: ", it.msg.Attempt, c.attemptsWord())
		c.poison(it, &failure{kind: KindPermanent, code: CodeMaxReceives, msg: gaveUp + f.msg, logged: gaveUp + f.logged})
		return
	}
	d := c.cfg.Backoff.Delay(it.msg.Attempt, f.retryAfter)
	it.outcome, it.delay, it.fail = retried, d, f
	now := c.d.Now()
	c.release(it, f, outbox.OutcomeFailed, now.Add(d), now)
	c.d.Log.WarnContext(it.ctx, "consume: transient failure; retrying", "receiveCount", it.msg.ReceiveCount, "attempt", it.msg.Attempt, "delay", d.String(), "error", f.logged)
}

// attemptsWord names what retry counts.
func (c *Consumer) attemptsWord() string {
	if c.cfg.Topic.FIFO {
		return "attempts"
	}
	return "receives"
}

// poison moves the item to the topic's DLQ with its reason and
// acknowledges it. If the DLQ cannot take it, it is retried instead: it
// must never be acknowledged without being in the DLQ.
func (c *Consumer) poison(it *item, f *failure) {
	now := c.d.Now()
	c.release(it, f, outbox.OutcomeDeadLettered, time.Time{}, now)
	r := Reason{Code: f.code, Message: truncate.String(f.msg, maxReasonLen), Summary: truncate.String(f.logged, maxReasonLen), FailedAt: now}
	if err := c.d.Queue.DeadLetter(it.ctx, it.rec, r); err != nil {
		it.outcome, it.delay, it.fail = retried, c.cfg.Backoff.Delay(it.msg.Attempt, 0), f
		c.d.Log.ErrorContext(it.ctx, "consume: poison message could not be moved to the DLQ; retrying it", "errorCode", f.code, "error", err)
		return
	}
	it.outcome, it.fail = poisoned, f
	c.d.Log.ErrorContext(it.ctx, "consume: poison message moved to the DLQ", "errorCode", f.code, "errorMessage", truncate.String(f.logged, maxReasonLen))
}

// maxReasonLen bounds errorMessage (SQS attributes count toward the 256 KB
// message limit; the archiver stores it on the incident).
const maxReasonLen = 1024

// release hands a claimed row back (enqueued, lease cleared, lastError),
// recording the attempt as ended with o. A failure only delays the next
// attempt until the lease expires.
func (c *Consumer) release(it *item, f *failure, o outbox.AttemptOutcome, retryAt, now time.Time) {
	if !it.claimed {
		return
	}
	it.claimed = false
	r := Release{Row: it.row(c.cfg.Topic.Name), Owner: it.rec.MessageId, LastError: f.lastError(), RetryAt: retryAt, Now: now,
		Attempt: it.attempt(o, f), Log: it.log}
	err := retryWrite(it.ctx, func() error { return c.d.Rows.MarkRetry(it.ctx, r) })
	if err != nil && !isLeaseLost(err) {
		c.d.Log.WarnContext(it.ctx, "consume: could not hand the row back; it frees itself when the lease expires", "error", err)
	}
}

// row is the outbox row the item's message dispatches.
func (it *item) row(topic string) outbox.RowRef { return outbox.RowRef{Key: it.msg.Key, Topic: topic} }

// writeAttempts bounds retries of a row outcome write that failed for a
// reason other than a lost lease (throttling, a network error): the
// outcome is worth a few short waits, or the row stays processing until
// the sweeper settles it.
const writeAttempts = 3

// completeDurably records the handler's success, retrying with its own
// budget: every attempt until shortly before the invocation's deadline
// (waits growing to completionMaxWait). Once the side effect happened a
// lost completion is what lets the row's lease lapse and a sweep or
// redelivery run it again (reliability scenario 4's duplicate), so it is
// worth the rest of the invocation, not three short tries.
func (c *Consumer) completeDurably(it *item, owner string, a outbox.Attempt, log outbox.AttemptLog) error {
	reserve := min(completionReserve, time.Until(it.deadline)/10)
	budget, cancel := context.WithDeadline(it.ctx, it.deadline.Add(-max(reserve, 0)))
	defer cancel()
	var err error
	for attempt := 1; ; attempt++ {
		err = c.d.Rows.MarkCompleted(it.ctx, Completion{Row: it.row(c.cfg.Topic.Name), Owner: owner, Now: c.d.Now(), Attempt: a, Log: log})
		if err == nil || isLeaseLost(err) {
			return err
		}
		wait := min(time.Duration(attempt*attempt)*100*time.Millisecond, completionMaxWait)
		select {
		case <-budget.Done():
			return err
		case <-time.After(wait):
		}
		if attempt > 1 {
			c.d.Log.WarnContext(it.ctx, "consume: completion write failed; retrying", "attempt", attempt, "error", err)
		}
	}
}

const (
	// completionReserve is kept back from the invocation's deadline for
	// the batch's response (visibility delays, the reply).
	completionReserve = 2 * time.Second
	// completionMaxWait caps one wait between completion attempts.
	completionMaxWait = 2 * time.Second
)

func retryWrite(ctx context.Context, write func() error) error {
	var err error
	for attempt := 1; attempt <= writeAttempts; attempt++ {
		if err = write(); err == nil || isLeaseLost(err) {
			return err
		}
		if attempt < writeAttempts {
			if clock.Sleep(ctx, time.Duration(attempt*attempt)*100*time.Millisecond) != nil {
				return err
			}
		}
	}
	return err
}

// lastError is what the outbox row records for the operator.
func (f *failure) lastError() string {
	s := f.msg
	if f.kind == KindPermanent {
		s = f.code + ": " + f.msg
	}
	return truncate.String(s, outbox.MaxErrorLen)
}

// attest resolves the incident a successful replay came from.
func (c *Consumer) attest(it *item) error {
	if it.msg.ReplayOf == "" || c.d.Incidents == nil {
		return nil
	}
	if err := c.d.Incidents.ResolveReplay(it.ctx, it.msg.ReplayOf, c.d.Now()); err != nil {
		return err
	}
	c.d.Log.InfoContext(it.ctx, "consume: replay succeeded; incident resolved")
	return nil
}

// delay applies every retried item's visibility delay, in as few calls as
// the queue allows.
func (c *Consumer) delay(ctx context.Context, items []*item) {
	var ds []Delay
	for _, it := range items {
		if it.outcome == retried && it.rec.ReceiptHandle != "" {
			ds = append(ds, Delay{MessageID: it.rec.MessageId, ReceiptHandle: it.rec.ReceiptHandle, Visibility: it.delay})
		}
	}
	if len(ds) == 0 {
		return
	}
	if err := c.d.Queue.Delay(ctx, ds); err != nil {
		c.d.Log.WarnContext(ctx, "consume: could not set retry delays; the messages return after the queue's visibility timeout", "topic", c.cfg.Topic.Name, "error", err)
	}
}

// failErr is the error a trace segment records for an item.
func (it *item) failErr() error {
	if it.fail == nil || it.fail.benign {
		return nil
	}
	return errors.New(it.fail.logged)
}
