package cachepurge_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/siteswarm/eventplatform/internal/cachepurge"
)

// FuzzNormalizeTags: whatever the input, an accepted tag set is one the
// purge API takes and belongs to the tenant; a refusal has a code.
func FuzzNormalizeTags(f *testing.F) {
	f.Add("acme", "tenant:acme:page:/About", "TENANT:ACME")
	f.Add("acme", "tenant:acme-eu", "tenant:acme:x:y")
	f.Add("ACME", "tenant:acme", "")
	f.Add("acme", "tenant:acme:page:/a b", "tenant:acme:page:/a,b")
	f.Add("acme", "tenant:acme:page:/caf\u00e9", "tenant:acme:\x00:1")
	f.Fuzz(func(t *testing.T, tenant, a, b string) {
		tags, err := cachepurge.NormalizeTags(tenant, []string{a, b})
		if err != nil {
			if err.Code == "" || err.Message == "" {
				t.Fatalf("a refusal without code or message: %+v", err)
			}
			return
		}
		if !slices.IsSorted(tags) || len(slices.Compact(slices.Clone(tags))) != len(tags) {
			t.Fatalf("not sorted and unique: %q", tags)
		}
		for _, tag := range tags {
			if tag != strings.ToLower(tag) || len(tag) > cachepurge.MaxTagLen || strings.ContainsAny(tag, " ,") {
				t.Fatalf("a tag the API refuses: %q", tag)
			}
			for _, c := range []byte(tag) {
				if c < 0x21 || c > 0x7e {
					t.Fatalf("not printable ASCII: %q", tag)
				}
			}
			if tag != "tenant:"+tenant && !strings.HasPrefix(tag, "tenant:"+tenant+":") {
				t.Fatalf("tag %q outside tenant %q", tag, tenant)
			}
		}
	})
}
