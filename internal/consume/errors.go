package consume

import (
	"errors"
	"time"
)

// Error codes the runtime itself puts on poison messages (the errorCode
// message attribute on the DLQ copy). Handlers choose their own codes with
// Permanent; these are stable, never rename one.
const (
	// CodeEventIDMismatch: the eventId message attribute disagrees with
	// the envelope id (a message built by hand, or tampered with).
	CodeEventIDMismatch = "event_id_mismatch"
	// CodeTenantMismatch: the tenantId attribute disagrees with the
	// envelope tenant.
	CodeTenantMismatch = "tenant_mismatch"
	// CodeTopicMismatch: the message names another topic than the queue's
	// (misrouted).
	CodeTopicMismatch = "topic_mismatch"
	// CodePayloadCorrupt: a claim-checked payload does not match its
	// recorded size and SHA-256.
	CodePayloadCorrupt = "payload_corrupt"
	// CodeLedgerMissing: the event's ledger item is gone (past its
	// retention) and its outbox row with it, so no idempotency record can
	// be kept; replaying the incident restores both.
	CodeLedgerMissing = "ledger_missing"
	// CodeHandlerRejected is the code of a Permanent error built without
	// one.
	CodeHandlerRejected = "handler_rejected"
	// CodeMaxReceives: a transient failure on the message's last receive
	// (the topic's maxReceiveCount; on a FIFO topic its maxReceiveCount-th
	// attempt); the message is the last error. The
	// same code as an incident SQS redrove (incident.CodeMaxReceives).
	CodeMaxReceives = "max_receives_exceeded"
)

// Kind says what the runtime does with a failed message.
type Kind int

const (
	// KindTransient: report the item failure and retry after a backoff
	// (or the handler's retry-after). On the topic's maxReceiveCount-th
	// receive (FIFO: attempt) the runtime dead-letters it instead
	// (CodeMaxReceives); SQS redrive is the backstop. Any error not built with Permanent is
	// transient.
	KindTransient Kind = iota
	// KindPermanent: retrying cannot help. The runtime sends the message to
	// the topic's DLQ with the reason and acknowledges it, so it never
	// blocks the queue.
	KindPermanent
)

func (k Kind) String() string {
	if k == KindPermanent {
		return "permanent"
	}
	return "transient"
}

// Error carries a handler failure's retry intent.
type Error struct {
	Kind Kind
	// Code is the machine-readable reason of a permanent failure.
	Code string
	// RetryAfter, when positive, replaces the computed backoff of a
	// transient failure (still capped by Backoff.Cap).
	RetryAfter time.Duration
	Err        error
}

// Error is the wrapped error's message; the code travels separately (see
// Classify), so it is not repeated in lastError or errorMessage.
func (e *Error) Error() string { return e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// Retry marks err transient with the runtime's backoff. It is what any
// plain error means already; use it where saying so reads better.
func Retry(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Kind: KindTransient, Err: err}
}

// RetryAfter marks err transient and asks for the message to come back
// after d (for example a subscriber's Retry-After), capped by the backoff
// cap. d <= 0 means the runtime's backoff.
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &Error{Kind: KindTransient, RetryAfter: d, Err: err}
}

// Permanent marks err as poison: the message goes to the DLQ at once with
// errorCode=code. An empty code is CodeHandlerRejected.
func Permanent(code string, err error) error {
	if err == nil {
		return nil
	}
	if code == "" {
		code = CodeHandlerRejected
	}
	return &Error{Kind: KindPermanent, Code: code, Err: err}
}

// Classify reads an error's retry intent: its kind, the permanent code and
// the requested retry-after. Errors without an *Error in their chain are
// transient with the default backoff.
func Classify(err error) (kind Kind, code string, retryAfter time.Duration) {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind, e.Code, e.RetryAfter
	}
	return KindTransient, "", 0
}

// Redacted is err's text fit for logs and traces, which no erasure can
// reach: an error that quotes data the platform may have to erase (a
// subscriber's answer, deliver.AnswerError) has a Redacted method that
// names the data by length and hash instead, and that is used; any other
// error is its Error.
func Redacted(err error) string {
	var r interface{ Redacted() string }
	if errors.As(err, &r) {
		return r.Redacted()
	}
	return err.Error()
}

// IsPermanent reports whether err is poison.
func IsPermanent(err error) bool {
	k, _, _ := Classify(err)
	return k == KindPermanent
}
