package deliver

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode"
)

// AnswerError is a subscriber's non-2xx answer. Its Error quotes the start
// of the answer's body ("422 … contact ann@example.com already exists"),
// for the operator: it is what the outbox row's lastError and the
// incident record, stores a subject erasure redacts. Its Redacted, which
// the consumer logs and traces instead, names the body only by length
// and hash: a log line cannot be erased.
type AnswerError struct {
	Status int
	// Body is the start of the answer (at most snippetBytes), printable.
	Body string
	// Location is a redirect's target, credentials and query removed.
	Location string
}

// snippetBytes is how much of an answer is kept.
const snippetBytes = 256

func (e *AnswerError) Error() string {
	s := e.head()
	if e.Body != "" {
		s += ": " + strconv.Quote(e.Body)
	}
	return s + e.tail()
}

// Redacted is the error without the answer's words: its length and the
// start of its SHA-256, enough to tell two answers apart.
func (e *AnswerError) Redacted() string {
	s := e.head()
	if e.Body != "" {
		sum := sha256.Sum256([]byte(e.Body))
		s += fmt.Sprintf(" (answer: %d bytes, sha256 %s)", len(e.Body), hex.EncodeToString(sum[:6]))
	}
	return s + e.tail()
}

func (e *AnswerError) head() string {
	return fmt.Sprintf("subscriber answered %d %s", e.Status, http.StatusText(e.Status))
}

func (e *AnswerError) tail() string {
	if e.Location == "" {
		return ""
	}
	return " (to " + e.Location + ")"
}

// snippet is the start of the subscriber's answer, printable.
func snippet(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, snippetBytes))
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return ' '
	}, string(b)))
}
