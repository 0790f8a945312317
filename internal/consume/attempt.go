package consume

import (
	"context"
	"strings"
	"sync"
	"unicode"

	"github.com/siteswarm/eventplatform/internal/kit/truncate"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// Every delivery attempt is recorded on its outbox row (outbox.Attempt)
// by the outcome write the row gets anyway: the completion, the retry's
// hand-back, the dead letter's. The runtime knows when the attempt began
// (the claim), how long the handler ran, which delivery it was and how it
// ended; what the subscriber answered only the handler knows, and it says
// so with NoteAnswer or NoteFailure on the context it was given.

// note is what a handler noted about its attempt.
type note struct {
	mu     sync.Mutex
	status int
	answer string
	class  string
}

type noteKey struct{}

// NoteAnswer records, for the attempt's record, the subscriber's answer to
// the delivery a Handler is making: its HTTP status and the start of its
// body (kept printable, at most outbox.MaxAnswerLen bytes). It is a no-op
// outside a consumer's Handler (and in a BatchHandler, whose context is
// the whole batch's).
func NoteAnswer(ctx context.Context, status int, body string) {
	if n, ok := ctx.Value(noteKey{}).(*note); ok {
		n.mu.Lock()
		n.status, n.answer, n.class = status, printable(body), ""
		n.mu.Unlock()
	}
}

// NoteFailure records the class of a failure without an answer ("timeout",
// "connection", …: a word, never subject data) for the attempt's record.
func NoteFailure(ctx context.Context, class string) {
	if n, ok := ctx.Value(noteKey{}).(*note); ok {
		n.mu.Lock()
		n.status, n.answer, n.class = 0, "", className(class)
		n.mu.Unlock()
	}
}

// printable is s as an attempt keeps an answer: non-printable characters
// as spaces, trimmed, at most outbox.MaxAnswerLen bytes.
func printable(s string) string {
	s = strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return ' '
	}, s))
	return truncate.Bytes(s, outbox.MaxAnswerLen)
}

// className is a class as one word: spaces become underscores.
func className(s string) string {
	return truncate.Bytes(strings.Join(strings.Fields(s), "_"), outbox.MaxAttemptErrorLen)
}

// noting gives a handler's context the item's note.
func (it *item) noting(ctx context.Context) context.Context {
	it.note = &note{}
	return context.WithValue(ctx, noteKey{}, it.note)
}

// deliveryKind sets the item's delivery kind once its claim is taken: a replay,
// a probe (the topic's breaker is half open), a retry (the row has earlier
// attempts, or the message was received before) or the original.
func (c *Consumer) deliveryKind(it *item) {
	switch {
	case it.msg.ReplayOf != "":
		it.delivery = outbox.DeliveryReplay
	case c.d.Breaker != nil && c.d.Breaker.Probing(it.ctx):
		it.delivery = outbox.DeliveryProbe
	case it.log.Next > 1 || it.msg.Attempt > 1:
		it.delivery = outbox.DeliveryRetry
	default:
		it.delivery = outbox.DeliveryOriginal
	}
}

// attempt is the record of the item's attempt, ended with o (f: its
// failure, nil on success). It is zero for an item that holds no claim.
func (it *item) attempt(o outbox.AttemptOutcome, f *failure) outbox.Attempt {
	if it.log.Next == 0 {
		return outbox.Attempt{}
	}
	a := outbox.Attempt{N: it.log.Next, At: it.claimedAt, Delivery: it.delivery, Outcome: o}
	if it.ran {
		a.Duration = it.took
		a.DurationMs = it.took.Milliseconds()
	}
	if n := it.note; n != nil {
		n.mu.Lock()
		a.Status, a.Answer, a.Error = n.status, n.answer, n.class
		n.mu.Unlock()
		a.AnswerBytes = len(a.Answer)
	}
	if f != nil && a.Error == "" {
		switch {
		case f.kind == KindPermanent && f.code != "":
			a.Error = className(f.code)
		case f.class != "":
			a.Error = f.class
		case a.Status == 0:
			a.Error = "handler_error"
		}
	}
	return a
}
