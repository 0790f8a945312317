package consumerfn

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/matchtest"
)

// nonAlnum is the regexp hyphenate replaces.
var nonAlnum = regexp.MustCompile(`[^a-z0-9]+`)

// hyphenate is [^a-z0-9]+ replaced by "-", on every generated string.
func TestHyphenateAgreesWithThePattern(t *testing.T) {
	t.Parallel()
	for _, s := range matchtest.Strings("billing.events", "cache-purge.requests", "A.B__c--d..", ".x.", "é€😀\xff.a") {
		require.Equal(t, nonAlnum.ReplaceAllString(s, "-"), hyphenate(s), "%q", s)
	}
}

func FuzzHyphenate(f *testing.F) {
	for _, s := range matchtest.Seeds("billing.events", "A.B__c--d..", "é\xff.a") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		require.Equal(t, nonAlnum.ReplaceAllString(s, "-"), hyphenate(s), "%q", s)
	})
}
