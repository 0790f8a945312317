package standard

import (
	"testing"

	"github.com/siteswarm/eventplatform/internal/kit/matchtest"
)

// syntaxCases are the hand-written matchers with the regexps they replace.
var syntaxCases = []matchtest.Case{
	{Name: "sender type", Pattern: `^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z][A-Za-z0-9_-]*)*$`, Match: validSenderType,
		Samples: []string{"user.created", "A", "Invoice-Paid_2.z-.Q9", "a.b.c.d.e.f", "user"}},
}

// Each matcher accepts exactly what its pattern does.
func TestSyntaxAgreesWithThePatterns(t *testing.T) {
	t.Parallel()
	matchtest.AgreeAll(t, syntaxCases...)
}

func FuzzSyntax(f *testing.F) { matchtest.Fuzz(f, syntaxCases...) }
