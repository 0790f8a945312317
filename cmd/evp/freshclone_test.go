package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMakeDevFromFreshClone is the README's first command on a machine
// with nothing but Go and node: clone the repository (its committed HEAD),
// run `make dev` (which installs the pinned node tooling itself), send a
// signed Stripe event, then Ctrl-C the whole foreground process group as a
// terminal does, and check nothing is left running. It takes a while
// (npm ci, a build), so -short skips it.
func TestMakeDevFromFreshClone(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the fresh-clone `make dev` run")
	}
	for _, tool := range []string{"git", "make", "npm", "node"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s on PATH", tool)
		}
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skip("not inside a git work tree")
	}
	dir := filepath.Join(t.TempDir(), "clone")
	clone := exec.Command("git", "clone", "--quiet", "--no-hardlinks", strings.TrimSpace(string(top)), dir)
	out, err := clone.CombinedOutput()
	require.NoError(t, err, "%s", out)
	_, err = os.Stat(filepath.Join(dir, "node_modules"))
	require.ErrorIs(t, err, os.ErrNotExist, "a fresh clone has no node tooling yet")

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.Command("make", "dev", "DEV_FLAGS=--addr 127.0.0.1:0 --json")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "EVP_URL=", "NO_COLOR=1")
	// The pinned node this checkout installed (scripts/with-node.sh, where
	// the machine's node is older than 22), not another 52 MB download.
	if node := filepath.Join(strings.TrimSpace(string(top)), ".cache", "node"); fileExists(filepath.Join(node, "bin", "node")) {
		cmd.Env = append(cmd.Env, "EVP_NODE_DIR="+node)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	pgid := cmd.Process.Pid
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			_ = cmd.Wait()
		}
	})

	// The banner's URL, or "" when make's output ends without one (it
	// failed).
	urls := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`running at (http://\S+)`)
		sc := bufio.NewScanner(stdout)
		found := ""
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found = m[1]
				break
			}
		}
		urls <- found
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var url string
	select {
	case url = <-urls:
	case <-ctx.Done():
	}
	if url == "" {
		t.Fatalf("make dev printed no banner:\n%s", tail(stderr.String()))
	}

	resp, err := http.Get(url + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	sent, err := run(t, ctx, "", "stripe", "send", "invoice.paid", "--new-id", "--url", url)
	require.NoError(t, err, sent)
	require.Contains(t, sent, `"status": "enqueued"`)

	// Ctrl-C: SIGINT to the foreground process group (make, go run, evp).
	require.NoError(t, syscall.Kill(-pgid, syscall.SIGINT))
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
		stopped = true
	case <-time.After(60 * time.Second):
		t.Fatalf("make dev did not stop on Ctrl-C:\n%s", tail(stderr.String()))
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	require.Eventually(t, func() bool { return len(processesIn(t, dir)) == 0 }, 10*time.Second, 100*time.Millisecond,
		"processes still running in the clone after Ctrl-C: %v", processesIn(t, dir))
	require.ErrorIs(t, syscall.Kill(-pgid, 0), syscall.ESRCH, "the process group is gone")
}

// processesIn lists processes whose working directory is dir or below it
// (fauxqs runs with its cwd in the clone, in its own process group).
func processesIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("needs /proc")
	}
	var out []string
	for _, e := range entries {
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil || (cwd != dir && !strings.HasPrefix(cwd, dir+"/")) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, e.Name()+": "+strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return out
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-30):], "\n")
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
