package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// children lists the pids whose parent is this process (Linux /proc).
func children(t *testing.T) map[int]string {
	t.Helper()
	out := map[int]string{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("needs /proc")
	}
	self := strconv.Itoa(os.Getpid())
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		rest := string(stat[bytes.LastIndexByte(stat, ')')+2:])
		if f := strings.Fields(rest); len(f) > 1 && f[1] == self {
			cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			out[pid] = strings.ReplaceAll(string(cmd), "\x00", " ")
		}
	}
	return out
}

// evp-dev serves until its context is cancelled (Ctrl-C), then leaves no
// child process behind.
func TestDevCommandServesUntilCancelled(t *testing.T) {
	// Not parallel: it counts this process's children.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	root := newDevCmd()
	root.SetOut(pw)
	var logs bytes.Buffer
	root.SetErr(&logs)
	root.SetArgs([]string{"--addr", "127.0.0.1:0", "--json", "--sweep-every", "1h"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx); _ = pw.Close() }()

	url := ""
	banner := bufio.NewScanner(pr)
	re := regexp.MustCompile(`running at (http://\S+)`)
	for banner.Scan() {
		if m := re.FindStringSubmatch(banner.Text()); m != nil {
			url = m[1]
			break
		}
	}
	require.NotEmpty(t, url, "the banner names the address")
	go func() { _, _ = io.Copy(io.Discard, pr) }()

	resp, err := http.Get(url + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var node []string
	for _, cmd := range children(t) {
		if strings.Contains(cmd, "node") {
			node = append(node, cmd)
		}
	}
	require.Len(t, node, 1, "the SQS emulator runs as a child: %v", node)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("evp-dev did not stop")
	}
	for pid, cmd := range children(t) {
		require.NotContains(t, cmd, "node", "child %d outlived evp-dev", pid)
	}
	_, err = http.Get(url + "/healthz")
	require.Error(t, err, "nothing listens any more")
	require.Contains(t, logs.String(), `"msg":"devstack: stopping`, "--json logs JSON lines")
}
