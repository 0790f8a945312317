package webhook

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
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
