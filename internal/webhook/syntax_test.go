package webhook

import (
	"strings"
	"testing"

	"github.com/siteswarm/eventplatform/internal/kit/matchtest"
)

// syntaxCases are the hand-written matchers with the regexps they replace.
var syntaxCases = []matchtest.Case{
	// SourceNamePattern is the text errors quote: the case pins it too.
	{Name: "source", Pattern: `^[a-z][a-z0-9_]{0,31}$`, Match: func(s string) bool {
		return SourceNamePattern == `^[a-z][a-z0-9_]{0,31}$` && ValidSourceName(s)
	}, Samples: []string{"acme", "a", "a_1_", "z" + strings.Repeat("_", 31)}},
	{Name: "provider", Pattern: `^[a-z][a-z0-9]{0,30}$`, Match: validProviderName,
		Samples: []string{"stripe", "a", "a1b2", "z" + strings.Repeat("9", 30)}},
}

// Each matcher accepts exactly what its pattern does.
func TestSyntaxAgreesWithThePatterns(t *testing.T) {
	t.Parallel()
	matchtest.AgreeAll(t, syntaxCases...)
}

func FuzzSyntax(f *testing.F) { matchtest.Fuzz(f, syntaxCases...) }
