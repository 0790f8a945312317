package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// evp is what operators install and run against production: it must not
// link the local stack or its emulators (it linked all of them through
// `evp dev` — minidyn, gofakes3, the local Lambda and Step Functions
// runners, every function's wiring), nor test packages. The local stack is
// cmd/evp-dev; evp reaches a running one through package devapi.
func TestEvpLinksNoEmulators(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	require.NoError(t, err, "go list -deps ./cmd/evp")
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/siteswarm/eventplatform/internal/devapi", "the local stack's clients, without the stack")
	for _, pkg := range []string{
		"github.com/siteswarm/eventplatform/internal/local",
		"github.com/siteswarm/eventplatform/internal/local/testkit",
		"github.com/truora/minidyn",
		"github.com/johannesboyne/gofakes3",
		"testing",
		"net/http/httptest",
	} {
		for _, d := range deps {
			require.False(t, d == pkg || strings.HasPrefix(d, pkg+"/"), "evp links %s", d)
		}
	}
}
