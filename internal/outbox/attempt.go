package outbox

import (
	"time"
)

// Delivery says which delivery of a dispatch an attempt belonged to.
type Delivery string

const (
	// DeliveryOriginal: the first attempt at the dispatch.
	DeliveryOriginal Delivery = "original"
	// DeliveryRetry: a later attempt after a failure (SQS's redelivery, a
	// copy the breaker held, a resend after a lost outcome).
	DeliveryRetry Delivery = "retry"
	// DeliveryReplay: an operator's replay of the dispatch's incident.
	DeliveryReplay Delivery = "replay"
	// DeliveryProbe: delivered while the topic's breaker probed the
	// subscriber (half open), so its outcome decides whether the topic
	// resumes.
	DeliveryProbe Delivery = "probe"
)

// AttemptOutcome is how an attempt ended.
type AttemptOutcome string

const (
	// OutcomeDelivered: the handler succeeded (an HTTP subscriber answered
	// 2xx).
	OutcomeDelivered AttemptOutcome = "delivered"
	// OutcomeFailed: a transient failure; the message comes back.
	OutcomeFailed AttemptOutcome = "failed"
	// OutcomeHeld: a transient failure the topic's breaker held (the
	// subscriber is down): the message waits for the probe.
	OutcomeHeld AttemptOutcome = "held"
	// OutcomeDeadLettered: a permanent failure, or the last attempt's:
	// the message went to the DLQ (its incident).
	OutcomeDeadLettered AttemptOutcome = "dead_lettered"
	// OutcomeLost: the consumer's lease ended before it recorded an
	// outcome (the invocation died or timed out); found by the next claim
	// or the sweeper's settle.
	OutcomeLost AttemptOutcome = "lost"
)

// Attempt is one delivery attempt of a dispatch: a consumer's run of its
// topic's handler for the (event, topic). The row keeps its attempts
// (Row.DeliveryAttempts): each is written by the outcome write the row
// gets anyway (completion, retry, dead letter, the sweeper's settle), never
// by a write of its own.
type Attempt struct {
	// N numbers the dispatch's attempts from 1.
	N int `json:"n"`
	// At is when the consumer claimed the row for the attempt.
	At time.Time `json:"at"`
	// Duration is how long the handler ran (zero when it did not run).
	Duration time.Duration `json:"-"`
	// DurationMs is Duration in JSON.
	DurationMs int64          `json:"durationMs"`
	Delivery   Delivery       `json:"delivery,omitempty"`
	Outcome    AttemptOutcome `json:"outcome"`
	// Status is the subscriber's HTTP status (0: it did not answer, or the
	// topic's handler is not an HTTP delivery).
	Status int `json:"status,omitempty"`
	// Error is the failure's class when there is no answer to show: a
	// permanent failure's code, "timeout", "connection", "handler_error",
	// … (never subject data: see Answer).
	Error string `json:"error,omitempty"`
	// Answer is the start of the subscriber's answer (at most
	// MaxAnswerLen bytes, printable), quoted for the operator as an
	// incident's error is. It is subject data: a subject erasure removes
	// it (AnswerBytes then says how long it was) and the retention expiry
	// deletes it with its row.
	Answer string `json:"answer,omitempty"`
	// AnswerBytes is how long the kept answer was (also once erased).
	AnswerBytes int `json:"answerBytes,omitempty"`
	// AnswerErased: the answer was removed by a subject erasure.
	AnswerErased bool `json:"answerErased,omitempty"`
}

// Attempt limits: an attempt record is bounded, and so is what a row keeps
// of them (a subscriber failing for days must not grow its rows' writes).
const (
	// MaxAnswerLen bounds the answer an attempt keeps (the snippet an
	// incident's error quotes is as long).
	MaxAnswerLen = 256
	// MaxAttemptErrorLen bounds an attempt's error class.
	MaxAttemptErrorLen = 120
	// KeptAnswers is how many of the latest attempts keep their answer;
	// older attempts keep everything else.
	KeptAnswers = 10
	// KeptAttempts is how many of the latest attempts a row keeps; the
	// numbers of the kept ones say how many came before.
	KeptAttempts = 100
)

// AttemptLog is what a consumer's claim learned of the row's attempts,
// handed back with the outcome so the store can append the attempt within
// the same write (and within the row's current write units where it can).
type AttemptLog struct {
	// Kept are the row's attempts as the claim found them. Only the lease
	// holder writes them, so the outcome write replaces them with Kept and
	// the new attempts (trimmed to KeptAttempts, answers to KeptAnswers);
	// an erasure meanwhile (the only other writer) makes it append instead,
	// without the answer.
	Kept []Attempt
	// Known: Kept is the row's list as the claim read it. Without it (a
	// completion carried in a copy of the message, which carries no
	// answers) the write appends.
	Known bool
	// Next is the number of the claim's attempt.
	Next int
	// Room is how many bytes the outcome write may add to the row without
	// costing another write unit (negative: none; the store trims the
	// answer it keeps to fit, never the attempt itself).
	Room int
	// Lost is the attempt whose lease the claim took over: it ended
	// without an outcome, and the outcome write records it as lost.
	Lost *Attempt
}
