package internal_test

import (
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/siteswarm/eventplatform/"

// Floors of the layout, bottom up (doc.go, docs/architecture.md §7).
const (
	floorLibraries = iota // internal/kit, internal/observe
	floorPlatform         // the domain packages directly under internal/
	floorAdapters         // internal/aws, internal/thirdparty
	floorWiring           // internal/wire
	floorLocal            // internal/local
	floorEntry            // functions/, cmd/
)

var floorNames = []string{"kit+observe", "platform", "aws+thirdparty", "wire", "local", "functions+cmd"}

// upwardAllowed are the imports that run up a floor, each with its reason.
var upwardAllowed = map[string]string{
	"internal/observe/costmodel -> internal/aws/table": "the cost model meters DynamoDB calls against the tables' definitions (index projections); only tests link it",
}

// floor places a package; ok is false outside the layout (test kits).
func floor(pkg string) (int, bool) {
	if testKit(pkg) {
		return 0, false
	}
	parts := strings.Split(pkg, "/")
	switch {
	case parts[0] == "functions" || parts[0] == "cmd":
		return floorEntry, true
	case len(parts) < 2 || parts[0] != "internal":
		return 0, false
	}
	switch parts[1] {
	case "kit", "observe":
		return floorLibraries, true
	case "aws", "thirdparty":
		return floorAdapters, true
	case "wire":
		return floorWiring, true
	case "local":
		return floorLocal, true
	}
	return floorPlatform, true
}

// testKit reports whether pkg exists for tests: the stack's fixtures
// (local/testkit) and the <pkg>test packages (contract suites, wiretest,
// awslocaltest, …). A test kit may import any floor, as the tests that
// use it do; none sits on kit/ (TestTheKitStandsOnNothing).
func testKit(pkg string) bool {
	last := pkg[strings.LastIndex(pkg, "/")+1:]
	return pkg == "internal/local/testkit" || strings.HasSuffix(last, "test")
}

// imports are the module's packages and what each imports of the module
// (tests' imports left out).
func imports(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"...").Output()
	require.NoError(t, err)
	graph := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], module)
		graph[pkg] = nil
		for _, imp := range f[1:] {
			if rest, ok := strings.CutPrefix(imp, module); ok {
				graph[pkg] = append(graph[pkg], rest)
			}
		}
	}
	return graph
}

// Imports point down: no package imports one on a higher floor (but the
// allowed ones), and only test kits import test kits.
func TestImportsPointDown(t *testing.T) {
	t.Parallel()
	graph := imports(t)
	require.Greater(t, len(graph), 50, "the module's packages were listed")
	var upward []string
	arrows := map[[2]int]int{}
	for pkg, deps := range graph {
		from, ok := floor(pkg)
		if !ok {
			continue
		}
		for _, dep := range deps {
			require.False(t, testKit(dep), "%s imports the test kit %s", pkg, dep)
			to, ok := floor(dep)
			if !ok {
				continue
			}
			arrows[[2]int{from, to}]++
			if to > from {
				upward = append(upward, pkg+" -> "+dep)
			}
		}
	}
	sort.Strings(upward)
	var unexpected []string
	for _, a := range upward {
		if _, ok := upwardAllowed[a]; !ok {
			unexpected = append(unexpected, a)
		}
	}
	require.Empty(t, unexpected, "imports that run up a floor (doc.go): move the code down, or the import's target up")
	for a := range upwardAllowed {
		require.Contains(t, upward, a, "an allowed upward import is gone: drop it from upwardAllowed")
	}
	// The figures docs/architecture.md §7 quotes (go test -v prints them).
	var lines []string
	for k, n := range arrows {
		if k[0] != k[1] {
			lines = append(lines, fmt.Sprintf("%-14s -> %-14s %3d", floorNames[k[0]], floorNames[k[1]], n))
		}
	}
	slices.Sort(lines)
	t.Logf("imports between floors:\n%s\nupward: %d %v", strings.Join(lines, "\n"), len(upward), upward)
}

// The emulator kit is infrastructure: of the platform it knows the
// topology (what to provision) and devapi (how the local stack is
// reached), never a service (provisioning used to ask internal/jobs and
// internal/jobkinds for their queues' names).
func TestTheEmulatorKitKnowsNoService(t *testing.T) {
	t.Parallel()
	graph := imports(t)
	for _, dep := range graph["internal/local/awslocal"] {
		if f, _ := floor(dep); f == floorPlatform {
			require.Contains(t, []string{"internal/topology", "internal/devapi"}, dep, "awslocal imports %s", dep)
		}
	}
}

// The ground floor holds only what stands on nothing: a package under kit/
// (its test kits included) imports nothing of the project but kit/. The
// fixtures that need the domain or the emulators live beside the stack
// (local/testkit), where they stand on what they use.
func TestTheKitStandsOnNothing(t *testing.T) {
	t.Parallel()
	graph := imports(t)
	kits := 0
	for pkg, deps := range graph {
		if !strings.HasPrefix(pkg, "internal/kit/") {
			continue
		}
		kits++
		for _, dep := range deps {
			require.True(t, strings.HasPrefix(dep, "internal/kit/"), "%s imports %s: kit/ stands on nothing of the project", pkg, dep)
		}
	}
	require.GreaterOrEqual(t, kits, 9, "the kit's packages were listed")
}
