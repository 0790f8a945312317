package jobs

import (
	"strings"
	"testing"

	"github.com/siteswarm/eventplatform/internal/kit/matchtest"
)

// syntaxCases are the hand-written matchers with the regexps they replace.
var syntaxCases = []matchtest.Case{
	{Name: "kind", Pattern: `^[a-z][a-z0-9]*(-[a-z0-9]+)*$`, Match: validKind,
		Samples: []string{"counter", "a", "cache-purge-2", "a1-b-0c9", "x-" + strings.Repeat("9", 40)}},
	{Name: "job id", Pattern: `^job_[0-9a-f]{32}$`, Match: ValidJobID,
		Samples: []string{"job_0123456789abcdef0123456789abcdef", "job_" + strings.Repeat("f", 32)}},
	{Name: "key", Pattern: `^[A-Za-z0-9._:/@+=-]{1,200}$`, Match: validKey,
		Samples: []string{"k1", "=", "evt_1:topic/a@b+c=d.e-f", "Zz09._:/@+=-", strings.Repeat("k", 200)}},
}

// Each matcher accepts exactly what its pattern does.
func TestSyntaxAgreesWithThePatterns(t *testing.T) {
	t.Parallel()
	matchtest.AgreeAll(t, syntaxCases...)
}

func FuzzSyntax(f *testing.F) { matchtest.Fuzz(f, syntaxCases...) }
