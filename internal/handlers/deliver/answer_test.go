package deliver_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/handlers/deliver"
)

// A subscriber's answer is quoted for the operator (Error: lastError, the
// incident) and named by length and hash for logs (Redacted, which
// consume.Redacted finds through the retry-intent wrapper).
func TestAnAnswerIsQuotedForTheOperatorAndHashedForLogs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name           string
		err            *deliver.AnswerError
		quoted, logged string
	}{
		{"body", &deliver.AnswerError{Status: 422, Body: "contact ann@example.com already exists"},
			`subscriber answered 422 Unprocessable Entity: "contact ann@example.com already exists"`,
			"subscriber answered 422 Unprocessable Entity (answer: 38 bytes, sha256 "},
		{"no body", &deliver.AnswerError{Status: 503},
			"subscriber answered 503 Service Unavailable", "subscriber answered 503 Service Unavailable"},
		{"redirect", &deliver.AnswerError{Status: 302, Body: "moved", Location: "https://example.com/new"},
			`subscriber answered 302 Found: "moved" (to https://example.com/new)`,
			"subscriber answered 302 Found (answer: 5 bytes, sha256 "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			wrapped := consume.Permanent(deliver.CodeRejected, c.err)
			require.Equal(t, c.quoted, wrapped.Error())
			require.Contains(t, consume.Redacted(wrapped), c.logged)
			if c.err.Body != "" {
				require.NotContains(t, consume.Redacted(wrapped), c.err.Body)
			}
			if c.err.Location != "" {
				require.Contains(t, consume.Redacted(wrapped), "(to "+c.err.Location+")")
			}
		})
	}
	require.Equal(t, "plain", consume.Redacted(errors.New("plain")), "other errors are their text")
}
