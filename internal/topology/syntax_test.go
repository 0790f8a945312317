package topology

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/matchtest"
)

// syntaxCases are the hand-written matchers with the regexps they replace.
var syntaxCases = []matchtest.Case{
	{Name: "consumer kind", Pattern: `^[a-z][a-z0-9-]*$`, Match: validConsumerKind,
		Samples: []string{"http", "a", "cache-purge", "x1--", "z" + strings.Repeat("-9", 30)}},
	{Name: "topic", Pattern: `^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)*$`, Match: validTopicName,
		Samples: []string{"billing.events", "a", "a-.b1-.c", "cache-purge.requests", strings.Repeat("x.", 30) + "y"}},
	{Name: "source", Pattern: sourceNamePattern, Match: validSourceName,
		Samples: []string{"stripe", "a", "a-1-", "z" + strings.Repeat("9", 63)}},
	{Name: "type pattern", Pattern: `^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*(\.\*)?$`, Match: validTypePattern,
		Samples: []string{"order.*", "a", "invoice.paid", "a_1.b_.c.*", "audit.user.deleted", strings.Repeat("t", 60) + ".*"}},
}

// Each matcher accepts exactly what its pattern does (the source's is the
// text Validate's error quotes).
func TestSyntaxAgreesWithThePatterns(t *testing.T) {
	t.Parallel()
	matchtest.AgreeAll(t, syntaxCases...)
}

// A bad source's error quotes the pattern, as when it was a regexp.
func TestBadSourceQuotesThePattern(t *testing.T) {
	t.Parallel()
	top := Default()
	top.Producers = append(top.Producers, Producer{Source: "Shop", Types: []string{"order.*"}})
	require.ErrorContains(t, top.Validate(), `producer "Shop": source must match ^[a-z][a-z0-9-]{0,63}$`)
}

func FuzzSyntax(f *testing.F) { matchtest.Fuzz(f, syntaxCases...) }
