package dynamo

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/kit/truncate"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// A dispatch row keeps its delivery attempts (outbox.Attempt) in one list
// attribute, tries, one string per attempt, oldest first:
//
//	<n> <at ms> <duration ms> <delivery|-> <outcome> <status> <error|-> <answer mark> <answer>
//
// where the answer mark is "-" (no answer), the answer's byte length (the
// answer follows, the rest of the string), or "x<length>" (erased by a
// subject erasure). A string, not a map per attempt: DynamoDB bills a
// map's attribute names in every element, and an attempt with a short
// answer fits in under 80 bytes, so the completion that records the first
// attempt stays within the row's write unit.
//
// Only the consumer holding the row's lease writes the list (and the
// sweeper settling a lease that ended), in the outcome write the row gets
// anyway: it replaces the list it read at the claim (ALL_OLD) with that
// list plus the new attempts, trimmed to outbox.KeptAttempts, answers to
// outbox.KeptAnswers. The only other writer is the subject erasure, which
// marks the row (erasedAt) in the same write that removes the answers; an
// outcome write is conditional on the mark's absence, and on a refusal for
// it appends the new attempts without their answers instead (so no answer
// is written after an erasure began).

// attrTries is the attempts' attribute.
const attrTries = "tries"

// encodeAttempt is a's string.
func encodeAttempt(a outbox.Attempt) string {
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	mark := "-"
	switch {
	case a.AnswerErased:
		mark = "x" + strconv.Itoa(a.AnswerBytes)
	case a.Answer != "":
		mark = strconv.Itoa(len(a.Answer))
	}
	at := int64(0)
	if !a.At.IsZero() {
		at = a.At.UnixMilli()
	}
	s := fmt.Sprintf("%d %d %d %s %s %d %s %s", a.N, at, max(a.Duration.Milliseconds(), a.DurationMs, 0), dash(string(a.Delivery)),
		dash(string(a.Outcome)), a.Status, dash(oneWord(a.Error)), mark)
	if mark != "-" && !a.AnswerErased {
		s += " " + a.Answer
	}
	return s
}

// oneWord keeps a class a single field.
func oneWord(s string) string {
	return truncate.Bytes(strings.Join(strings.Fields(s), "_"), outbox.MaxAttemptErrorLen)
}

// decodeAttempt reads one tries string; a malformed one is an error (the
// row is then shown without its attempts, never with wrong ones).
func decodeAttempt(s string) (outbox.Attempt, error) {
	f := strings.SplitN(s, " ", 9)
	if len(f) < 8 {
		return outbox.Attempt{}, fmt.Errorf("attempt %q: want 8 fields", truncate.String(s, 40))
	}
	var a outbox.Attempt
	var err error
	num := func(i int) int64 {
		n, e := strconv.ParseInt(f[i], 10, 64)
		if e != nil && err == nil {
			err = fmt.Errorf("attempt %q: field %d is not a number", truncate.String(s, 40), i+1)
		}
		return n
	}
	undash := func(v string) string {
		if v == "-" {
			return ""
		}
		return v
	}
	a.N = int(num(0))
	if at := num(1); at > 0 {
		a.At = time.UnixMilli(at).UTC()
	}
	a.DurationMs = num(2)
	a.Duration = time.Duration(a.DurationMs) * time.Millisecond
	a.Delivery = outbox.Delivery(undash(f[3]))
	a.Outcome = outbox.AttemptOutcome(undash(f[4]))
	a.Status = int(num(5))
	a.Error = undash(f[6])
	switch mark := f[7]; {
	case mark == "-":
	case strings.HasPrefix(mark, "x"):
		n, e := strconv.Atoi(mark[1:])
		if e != nil {
			return outbox.Attempt{}, fmt.Errorf("attempt %q: bad answer mark", truncate.String(s, 40))
		}
		a.AnswerErased, a.AnswerBytes = true, n
	default:
		if _, e := strconv.Atoi(mark); e != nil || len(f) < 9 {
			return outbox.Attempt{}, fmt.Errorf("attempt %q: bad answer mark", truncate.String(s, 40))
		}
		a.Answer = f[8]
		a.AnswerBytes = len(a.Answer)
	}
	if err != nil {
		return outbox.Attempt{}, err
	}
	return a, nil
}

// decodeAttempts reads a row's tries; a malformed entry is skipped.
func decodeAttempts(tries []string) []outbox.Attempt {
	if len(tries) == 0 {
		return nil
	}
	out := make([]outbox.Attempt, 0, len(tries))
	for _, s := range tries {
		if a, err := decodeAttempt(s); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// attemptList is the tries value of kept followed by added, trimmed: the
// latest outbox.KeptAttempts attempts, the latest outbox.KeptAnswers of
// them with their answers.
func attemptList(kept, added []outbox.Attempt) []outbox.Attempt {
	all := append(append([]outbox.Attempt{}, kept...), added...)
	if len(all) > outbox.KeptAttempts {
		all = all[len(all)-outbox.KeptAttempts:]
	}
	answered := 0
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Answer == "" {
			continue
		}
		if answered++; answered > outbox.KeptAnswers {
			all[i].Answer, all[i].AnswerBytes = "", 0
		}
	}
	return all
}

// triesValue is the DynamoDB list of attempts.
func triesValue(as []outbox.Attempt) *ddbtypes.AttributeValueMemberL {
	l := &ddbtypes.AttributeValueMemberL{Value: make([]ddbtypes.AttributeValue, len(as))}
	for i, a := range as {
		l.Value[i] = str(encodeAttempt(a))
	}
	return l
}

// redacted is as without their answers (marked erased).
func redacted(as []outbox.Attempt) []outbox.Attempt {
	out := make([]outbox.Attempt, len(as))
	for i, a := range as {
		if a.Answer != "" {
			a.AnswerErased, a.AnswerBytes, a.Answer = true, len(a.Answer), ""
		}
		out[i] = a
	}
	return out
}

// answered reports whether any attempt keeps an answer.
func answered(as []outbox.Attempt) bool {
	for _, a := range as {
		if a.Answer != "" {
			return true
		}
	}
	return false
}

// newAttempts are the attempts an outcome write records: the lost one the
// claim found, then a (when it has a number).
func newAttempts(a outbox.Attempt, log outbox.AttemptLog) []outbox.Attempt {
	var out []outbox.Attempt
	if log.Lost != nil {
		out = append(out, *log.Lost)
	}
	if a.N > 0 {
		a.Answer = truncate.Bytes(a.Answer, outbox.MaxAnswerLen)
		a.AnswerBytes = len(a.Answer)
		out = append(out, a)
	}
	return out
}

// fitAnswer trims the answer of the last of added so that the list's
// growth over kept fits room bytes (the write's billed size stays in the
// row's write unit); the attempt itself is always written.
func fitAnswer(kept, added []outbox.Attempt, room int) []outbox.Attempt {
	if len(added) == 0 || added[len(added)-1].Answer == "" {
		return added
	}
	last := &added[len(added)-1]
	grow := listSize(attemptList(kept, added)) - listSize(kept)
	if over := grow - room; over > 0 {
		keep := max(len(last.Answer)-over, 0)
		last.Answer = strings.TrimRight(truncate.Bytes(last.Answer, keep), " ")
		last.AnswerBytes = len(last.Answer)
	}
	return added
}

// listSize is the billed size of the tries attribute holding as (0 when
// there is none).
func listSize(as []outbox.Attempt) int {
	if len(as) == 0 {
		return 0
	}
	n := len(attrTries) + 3
	for _, a := range as {
		n += 1 + len(encodeAttempt(a))
	}
	return n
}
