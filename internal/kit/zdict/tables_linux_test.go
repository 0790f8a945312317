//go:build linux && (amd64 || arm64 || ppc64le || riscv64) && !nounsafe && !purego && !appengine

package zdict_test

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/zdict"
)

// The platforms where third_party/compress places the tables (its
// evp_tables_linux.go): elsewhere they are allocated as upstream's were.

// Warm maps the encoder's working tables in few page faults: the 2 MiB
// long table on a transparent huge page, both tables' pages in one call
// each (third_party/compress, PATCHES.md part 3). Mapped page by page, the
// two tables alone take 640 faults (512 + 128 pages of 4 KiB), about
// 20 µs each in a microVM: ~990 in all in a fresh process before, ~470
// after. Where the kernel has no transparent huge pages there is nothing
// to hold.
func TestWarmMapsItsTablesInFewPageFaults(t *testing.T) {
	t.Parallel()
	if os.Getenv("ZDICT_FRESH_PROCESS") == "faults" {
		var before, after syscall.Rusage
		require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &before))
		require.NoError(t, zdict.Warm())
		require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &after))
		faults := after.Minflt - before.Minflt
		t.Logf("Warm: %d page faults", faults)
		require.Less(t, faults, int64(640), "Warm faulted its tables in page by page")
		return
	}
	thp, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(thp), "[never]") {
		t.Skip("no transparent huge pages here")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWarmMapsItsTablesInFewPageFaults$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "ZDICT_FRESH_PROCESS=faults")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "PASS")
}
