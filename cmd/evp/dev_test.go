package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// `evp dev` starts evp-dev (found on PATH here: the test binary has none
// beside it) with its arguments untouched, and fails with its status.
func TestDevStartsEvpDevWithItsArguments(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\necho \"evp-dev got: $*\"\nexit 3\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, devBinary), []byte(script), 0o755))
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))

	out, err := run(t, context.Background(), "", "dev", "--addr", "127.0.0.1:0", "--sweep-every", "10s")
	require.Contains(t, out, "evp-dev got: --addr 127.0.0.1:0 --sweep-every 10s")
	require.ErrorIs(t, err, errSilent, "evp-dev printed its own error")
	require.Equal(t, exitStatus(3), err, "its exit status")
}

// Without evp-dev, `evp dev` says how to run the local stack; asked for
// help, it answers and exits 0 (it exited 1 with the error).
func TestDevWithoutEvpDevSaysHowToRunIt(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := run(t, context.Background(), "", "dev")
	require.ErrorIs(t, err, errDevNotInstalled)
	require.Contains(t, err.Error(), "go run ./cmd/evp-dev")

	for _, help := range []string{"--help", "-h"} {
		out, err := run(t, context.Background(), "", "dev", help)
		require.NoError(t, err, "help is an answer")
		require.Contains(t, out, "Usage:\n  evp dev [evp-dev flags]")
		require.Contains(t, out, "go run ./cmd/evp-dev")
	}
}

// With evp-dev installed, `evp dev --help` is evp-dev's own help, exit 0.
func TestDevHelpIsEvpDevsHelp(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\necho \"evp-dev help for: $*\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, devBinary), []byte(script), 0o755))
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := run(t, context.Background(), "", "dev", "--help")
	require.NoError(t, err)
	require.Equal(t, "evp-dev help for: --help\n", out)
}
