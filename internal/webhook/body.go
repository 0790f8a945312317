package webhook

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"
)

// MaxBodyBytes is the largest delivery accepted (1 MiB): ingest's payload
// limit. Anything larger is refused with 413 before any verification work.
const MaxBodyBytes = 1 << 20

// decodeBody returns the request body bytes. API Gateway hands text bodies
// over as they are and base64-encodes binary ones; either way the size is
// checked before anything is decoded or hashed.
func decodeBody(body string, isBase64 bool, limit int) ([]byte, *Error) {
	if !isBase64 {
		if len(body) > limit {
			return nil, tooLarge(len(body), limit)
		}
		return []byte(body), nil
	}
	// The exact decoded size of padded standard base64, from its length.
	n := base64.StdEncoding.DecodedLen(len(body)) - (len(body) - len(strings.TrimRight(body, "=")))
	if n > limit {
		return nil, tooLarge(n, limit)
	}
	out, err := base64.StdEncoding.DecodeString(body)
	if err != nil {
		return nil, &Error{Status: http.StatusBadRequest, Code: CodeInvalidBody, Message: "the base64-encoded body could not be decoded", Cause: err}
	}
	return out, nil
}

func tooLarge(n, limit int) *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeBodyTooLarge,
		Message: fmt.Sprintf("body is %d bytes; the limit is %d bytes", n, limit)}
}

// ReadJSON decodes a verified body into v, which reads the members the
// provider needs: the body must be UTF-8 and one JSON object. A failure is
// a 400 invalid_event saying what the body should have been (what: "a
// GitHub event").
func ReadJSON(body []byte, v any, what string) *Error {
	if !utf8.Valid(body) {
		return Invalid(CodeInvalidEvent, "the body is not valid UTF-8")
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Invalid(CodeInvalidEvent, "the body is not %s: a JSON object is expected", what)
	}
	if err := json.Unmarshal(trimmed, v); err != nil {
		e := Invalid(CodeInvalidEvent, "the body is not %s JSON object", what)
		e.Cause = err
		return e
	}
	return nil
}
