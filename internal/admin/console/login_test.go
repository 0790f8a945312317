package console

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// safeNext keeps a sign-in on the console's own pages, whatever the next
// parameter says; it is checked after cleaning, so "../" cannot leave.
func TestSafeNext(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ next, want string }{
		{"/console", "/console"},
		{"/console/", "/console"},
		{"/console/incidents?status=open&topic=crm.sync", "/console/incidents?status=open&topic=crm.sync"},
		{"/console/./jobs/../purge", "/console/purge"},
		{"/console/incidents#top", "/console/incidents"},
		{"/console/%2F%2Fevil.com", "/console/evil.com"},
		{`/console/../\evil.com`, "/console"},
		{"/console/../%5Cevil.com", "/console"},
		{"/console/%2e%2e/%2e%2e/evil", "/console"},
		{"/console/..", "/console"},
		{"/consoles", "/console"},
		{"//evil.com/console", "/console"},
		{"///evil.com", "/console"},
		{"https://evil.com/console", "/console"},
		{"javascript:alert(1)", "/console"},
		{"/console\tx", "/console"},
		{"/console/%00", "/console"},
		{"console/incidents", "/console"},
		{"/console/%zz", "/console"},
		{"", "/console"},
	} {
		require.Equal(t, c.want, safeNext(c.next), "next %q", c.next)
	}
}
