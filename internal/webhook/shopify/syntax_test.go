package shopify

import (
	"strings"
	"testing"

	"github.com/siteswarm/eventplatform/internal/kit/matchtest"
)

// syntaxCases are the hand-written matchers with the regexps they replace.
var syntaxCases = []matchtest.Case{
	{Name: "topic", Pattern: `^[a-z][a-z0-9_]*(/[a-z][a-z0-9_]*)+$`, Match: validTopic,
		Samples: []string{"orders/create", "a/b", "app_1/uninstalled/x_2_", "a/" + strings.Repeat("b", 60)}},
	{Name: "shop domain", Pattern: `^[a-z0-9][a-z0-9-]*\.myshopify\.com$`, Match: validShopDomain,
		Samples: []string{"acme.myshopify.com", "0.myshopify.com", "a-b--9-.myshopify.com", strings.Repeat("s", 40) + ".myshopify.com"}},
}

// Each matcher accepts exactly what its pattern does.
func TestSyntaxAgreesWithThePatterns(t *testing.T) {
	t.Parallel()
	matchtest.AgreeAll(t, syntaxCases...)
}

func FuzzSyntax(f *testing.F) { matchtest.Fuzz(f, syntaxCases...) }
