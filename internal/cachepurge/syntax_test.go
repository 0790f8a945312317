package cachepurge

import (
	"strings"
	"testing"

	"github.com/siteswarm/eventplatform/internal/kit/matchtest"
)

// syntaxCases are the hand-written matchers with the regexps they replace.
var syntaxCases = []matchtest.Case{
	{Name: "job id", Pattern: `^pj_[0-9a-f]{32}$`, Match: ValidJobID,
		Samples: []string{"pj_0123456789abcdef0123456789abcdef", "pj_" + strings.Repeat("a", 32)}},
	{Name: "collection", Pattern: `^[a-z0-9][a-z0-9_-]*$`, Match: validCollection,
		Samples: []string{"product", "0", "a_b-c", "9--__", strings.Repeat("c", 70)}},
}

// Each matcher accepts exactly what its pattern does.
func TestSyntaxAgreesWithThePatterns(t *testing.T) {
	t.Parallel()
	matchtest.AgreeAll(t, syntaxCases...)
}

func FuzzSyntax(f *testing.F) { matchtest.Fuzz(f, syntaxCases...) }
