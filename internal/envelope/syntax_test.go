package envelope

import (
	"strings"
	"testing"

	"github.com/siteswarm/eventplatform/internal/kit/matchtest"
)

// syntaxCases are the hand-written matchers with the regexps they replace
// (the schema's patterns).
var syntaxCases = []matchtest.Case{
	{Name: "id", Pattern: `^[A-Za-z0-9][A-Za-z0-9._:-]*$`, Match: idSyntax,
		Samples: []string{"evt_1", "A", "9z.Y_:-", "in_1Q2w3E:retry-2.b", strings.Repeat("a", MaxIDLen)}},
	{Name: "tenant", Pattern: `^[a-z0-9][a-z0-9_-]{0,63}$`, Match: tenantSyntax,
		Samples: []string{"acme", "0", "a_b-c", "9" + strings.Repeat("-", 63), strings.Repeat("t", 64)}},
	{Name: "type", Pattern: `^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$`, Match: typeSyntax,
		Samples: []string{"a.b", "stripe.invoice.paid", "x_1.y2_.z", "a." + strings.Repeat("b", 125)}},
	{Name: "source", Pattern: `^[a-z][a-z0-9-]{0,63}$`, Match: sourceSyntax,
		Samples: []string{"cms", "a", "a-1-", "z" + strings.Repeat("9", 63)}},
	{Name: "traceparent", Pattern: `^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$`, Match: traceparentSyntax,
		Samples: []string{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "ff-ffffffffffffffffffffffffffffffff-0000000000000000-a9"}},
	{Name: "timestamp", Pattern: `^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt]([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`, Match: timestampSyntax,
		Samples: []string{"2026-12-02T10:00:00Z", "2026-12-02t23:59:59z", "0000-99-99T19:00:00.5+01:00", "2026-01-01T20:30:40.123456789-23:59", "2026-01-01T00:00:00.0+00:00"}},
}

// Each field's matcher accepts exactly what its pattern (the schema's)
// does.
func TestSyntaxAgreesWithThePatterns(t *testing.T) {
	t.Parallel()
	matchtest.AgreeAll(t, syntaxCases...)
}

func FuzzSyntax(f *testing.F) { matchtest.Fuzz(f, syntaxCases...) }
