package main

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/jobkinds"
)

// `evp --version` answers (it was an unknown flag): the build and the Go
// toolchain, exit 0.
func TestVersion(t *testing.T) {
	t.Parallel()
	out, err := run(t, context.Background(), "", "--version")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(out, "evp "), out)
	require.Contains(t, out, runtime.Version())
}

// `evp jobs start --help` names every shipped kind with its arguments (it
// named 3 of 5), and so does `evp jobs --help`.
func TestJobsStartHelpNamesEveryKind(t *testing.T) {
	t.Parallel()
	var shipped []string
	for _, k := range jobkinds.Kinds() {
		shipped = append(shipped, k.Name)
	}
	var listed []string
	for _, k := range jobKinds {
		listed = append(listed, k.name)
	}
	require.ElementsMatch(t, shipped, listed, "cmd/evp jobKinds lists the shipped kinds")

	start, err := run(t, context.Background(), "", "jobs", "start", "--help")
	require.NoError(t, err)
	jobsHelp, err := run(t, context.Background(), "", "jobs", "--help")
	require.NoError(t, err)
	for _, name := range shipped {
		require.Regexp(t, `(?m)^  `+name+` +\S`, start, "jobs start --help: %s and its arguments", name)
		require.Contains(t, jobsHelp, name)
	}
}

// `evp purge --function` names the purge-api function it calls (it was
// described as the replay function's and ignored).
func TestPurgeFunctionFlag(t *testing.T) {
	t.Parallel()
	st := startStack(t)
	ctx := context.Background()
	help, err := run(t, ctx, "", "purge", "tags", "--help")
	require.NoError(t, err)
	require.Contains(t, help, `--function string   the purge-api function's name or ARN`)

	_, err = run(t, ctx, "", "purge", "tags", "--url", st.URL(), "--function", "no-such-function", "--tenant", "acme", "tenant:acme:page:/x")
	require.ErrorContains(t, err, "no-such-function", "the named function is the one invoked")
	out, err := run(t, ctx, "", "purge", "tags", "--url", st.URL(), "--function", "purge-api", "--tenant", "acme", "tenant:acme:page:/x")
	require.NoError(t, err, out)
	require.Regexp(t, `^pj_[0-9a-f]{32} queued\n$`, out)
}

// Where the output is not a terminal, progress is a line per change, never
// a carriage return; a count that did not move is not repeated.
func TestProgressBarWithoutATerminal(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	bar := &progressBar{w: &buf, total: 4, label: "replaying"}
	for _, n := range []int{0, 1, 1, 4} {
		bar.draw(n)
	}
	bar.finish()
	require.Equal(t, "replaying [>                             ] 0/4\n"+
		"replaying [=======>                      ] 1/4\n"+
		"replaying [==============================] 4/4\n", buf.String())
}
