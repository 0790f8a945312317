package replay

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/matchtest"
)

// ageCase is ageDays with the regexp it replaces.
var ageCase = matchtest.Case{Name: "age", Pattern: `^(\d+)d$`,
	Match:   func(s string) bool { _, ok := ageDays(s); return ok },
	Samples: []string{"7d", "0d", "0123456789d", "99999999999999999999999d"}}

// ageDays accepts what ^(\d+)d$ does and returns its group.
func TestAgeDaysAgreesWithThePattern(t *testing.T) {
	t.Parallel()
	matchtest.Agree(t, ageCase)
	re := regexp.MustCompile(ageCase.Pattern)
	for _, s := range matchtest.Strings(ageCase.Samples...) {
		if m := re.FindStringSubmatch(s); m != nil {
			n, ok := ageDays(s)
			require.True(t, ok, s)
			require.Equal(t, m[1], n, s)
		}
	}
}

func FuzzAgeDays(f *testing.F) { matchtest.Fuzz(f, ageCase) }
