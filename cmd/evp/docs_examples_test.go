package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// A docs example is a shell block the docs mark to be run:
//
//	<!-- docs-test: NAME … -->
//	```sh
//	…
//	```
type docsExample struct {
	file, name string
	line       int
	script     string
}

// docsExamplesRequired are the examples that must stay marked (and so run):
// the README's quickstart, publishing and jobs, the local development
// guide's walk-through, failure path and publishing, the jobs and purge
// CLIs. Their order is the order they run in, on one stack.
var docsExamplesRequired = []struct{ file, name string }{
	{"README.md", "quickstart"},
	{"README.md", "publish"},
	{"README.md", "jobs"},
	{"docs/local-development.md", "trying"},
	{"docs/local-development.md", "failure-path"},
	{"docs/local-development.md", "publish"},
	{"docs/jobs.md", "jobs"},
	{"docs/purge.md", "purge"},
}

var (
	docsMarker      = regexp.MustCompile(`^<!-- docs-test: ([a-z0-9-]+)\b.*-->$`)
	docsPlaceholder = regexp.MustCompile(`<[a-z][a-z-]*>`)
)

// docsPlaceholders are what an example may leave for the reader to fill
// in, and the shell that fills it in against the stack (docsPrelude).
var docsPlaceholders = map[string]string{
	"<incident-id>":  "$(docs_open_incident)",
	"<job-id>":       "$(docs_last job)",
	"<purge-job-id>": "$(docs_last pj)",
}

// docsPrelude runs before every example: evp is the binary built from this
// package (its output kept, so a later placeholder can name an id it
// printed), curl fails on an HTTP error, and the placeholders' helpers.
const docsPrelude = `set -euo pipefail
evp() { command evp "$@" | tee -a "$DOCS_LOG"; }
curl() { command curl -S --fail-with-body "$@"; echo; }
docs_last() {
	grep -o "$1_[0-9a-f]\{32\}" "$DOCS_LOG" | tail -1 | grep . || { echo "docs-test: no $1_ id printed yet" >&2; return 1; }
}
docs_open_incident() {
	for _ in $(seq 1 240); do
		id="$(command evp dlq list --json | grep -o '"incidentId": *"inc_[0-9a-f]*"' | head -1 | grep -o 'inc_[0-9a-f]*' || true)"
		if [ -n "$id" ]; then echo "$id"; return 0; fi
		sleep 0.5
	done
	echo "docs-test: no open incident within 2 minutes" >&2
	return 1
}
`

// readDocsExamples collects the marked shell blocks of a Markdown file.
func readDocsExamples(t *testing.T, root, file string) []docsExample {
	t.Helper()
	f, err := os.Open(filepath.Join(root, file))
	require.NoError(t, err)
	defer f.Close()
	var (
		out  []docsExample
		cur  *docsExample
		want string // a marker was seen: the next fence opens its block
		n    int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.script += line + "\n"
		case want != "" && strings.HasPrefix(line, "```"):
			require.Equal(t, "```sh", line, "%s:%d: a docs-test block is a ```sh block", file, n)
			cur = &docsExample{file: file, name: want, line: n}
			want = ""
		case want != "" && strings.TrimSpace(line) != "":
			t.Fatalf("%s:%d: the docs-test marker %q is not followed by a ```sh block", file, n, want)
		default:
			if m := docsMarker.FindStringSubmatch(line); m != nil {
				want = m[1]
			}
		}
	}
	require.NoError(t, sc.Err())
	require.Nil(t, cur, "%s: an unclosed block", file)
	return out
}

// script is the example as it runs against the stack at url: `go run
// ./cmd/evp` is the built evp, the local address is the stack's, and each
// placeholder is filled in.
func (e docsExample) runnable(t *testing.T, url string) string {
	t.Helper()
	var b strings.Builder
	for i, line := range strings.Split(e.script, "\n") {
		code, comment := splitComment(line)
		code = strings.ReplaceAll(code, "go run ./cmd/evp ", "evp ")
		code = strings.ReplaceAll(code, "http://127.0.0.1:3000", url)
		for _, p := range docsPlaceholder.FindAllString(code, -1) {
			fill, ok := docsPlaceholders[p]
			require.True(t, ok, "%s:%d (%s): placeholder %s: give TestDocsExamples a way to fill it in (docsPlaceholders) or write the value", e.file, e.line+1+i, e.name, p)
			code = strings.ReplaceAll(code, p, fill)
		}
		b.WriteString(code + comment + "\n")
	}
	return docsPrelude + b.String()
}

// splitComment splits a shell line before its comment: a # at the start of
// a word, outside quotes.
func splitComment(line string) (code, comment string) {
	var quote rune
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i], line[i:]
		}
	}
	return line, ""
}

// The README's and the docs' shell examples run, as written, against a
// local stack: the quickstart (a Stripe event, its duplicate, the
// subscriber failing, the incident, its replay, the smoke test), publish,
// jobs and purge. A sample that stops working (a file the repository lacks,
// a flag renamed, a command that fails) fails this test; each example's
// outcome is then checked on the stack.
func TestDocsExamples(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl", "grep", "tee"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s on PATH", tool)
		}
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "evp"), ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build evp: %s", out)

	byFile := map[string][]docsExample{}
	var examples []docsExample
	for _, req := range docsExamplesRequired {
		if _, ok := byFile[req.file]; !ok {
			byFile[req.file] = readDocsExamples(t, root, req.file)
		}
		found := false
		for _, e := range byFile[req.file] {
			if e.name == req.name {
				examples = append(examples, e)
				found = true
			}
		}
		require.True(t, found, "%s has no <!-- docs-test: %s --> block", req.file, req.name)
	}
	// No marked example goes unrun.
	for file, es := range byFile {
		for _, e := range es {
			listed := false
			for _, req := range docsExamplesRequired {
				listed = listed || (req.file == file && req.name == e.name)
			}
			require.True(t, listed, "%s:%d marks %q: add it to docsExamplesRequired", file, e.line, e.name)
		}
	}

	st := startStack(t)
	url := st.URL()
	logFile := filepath.Join(t.TempDir(), "evp-output.log")
	env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "EVP_URL=" + url, "DOCS_LOG=" + logFile, "HOME=" + os.Getenv("HOME"), "LANG=C.UTF-8"}
	work := scratchCheckout(t, root)
	for _, e := range examples {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-c", e.runnable(t, url))
		cmd.Dir, cmd.Env = work, env
		start := time.Now()
		out, err := cmd.CombinedOutput()
		cancel()
		require.NoError(t, err, "%s:%d (%s) failed after %s:\n%s", e.file, e.line, e.name, time.Since(start).Round(time.Millisecond), out)
		t.Logf("%s:%d (%s): %s", e.file, e.line, e.name, time.Since(start).Round(time.Millisecond))
		if check := docsOutcomes[e.file+"#"+e.name]; check != nil {
			check(t, st, string(out))
		}
	}
}

// scratchCheckout is a directory that reads as the checkout at root (a
// link to each of its entries) where the examples run: what they read
// (events/payloads/…) is the repository's, what they write (evp jobs
// download -o ./acme-export) lands in the test's temporary directory, not
// in the checkout.
func scratchCheckout(t *testing.T, root string) string {
	t.Helper()
	work := t.TempDir()
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	for _, e := range entries {
		require.NoError(t, os.Symlink(filepath.Join(root, e.Name()), filepath.Join(work, e.Name())))
	}
	return work
}

// docsOutcomes check what an example did on the stack, beyond each of its
// commands exiting 0.
var docsOutcomes = map[string]func(t *testing.T, st *devstack.Stack, out string){
	"README.md#quickstart": func(t *testing.T, st *devstack.Stack, out string) {
		require.Equal(t, 1, delivered(st, topology.Billing, "evt_1PzB7sLkdIwHu7ixQm3nT0aX"), "the sample event delivered once:\n%s", out)
		requireNoOpenIncident(t, st)
		require.Contains(t, out, "smoke test passed")
	},
	"README.md#publish": func(t *testing.T, st *devstack.Stack, out string) {
		id := regexp.MustCompile(`"eventId": "([^"]+)"`).FindStringSubmatch(out)
		require.NotNil(t, id, out)
		require.Eventually(t, func() bool { return delivered(st, topology.CRM, id[1]) == 1 }, 30*time.Second, 50*time.Millisecond, "the inquiry reaches crm.sync")
	},
	"README.md#jobs": func(t *testing.T, _ *devstack.Stack, out string) {
		require.Regexp(t, `Status\s+completed`, out, "the export ran to its end")
	},
	"docs/local-development.md#failure-path": func(t *testing.T, st *devstack.Stack, _ string) {
		requireNoOpenIncident(t, st)
	},
	"docs/purge.md#purge": func(t *testing.T, st *devstack.Stack, out string) {
		require.Regexp(t, `Tags\s+tenant:acme:page:/pricing tenant:acme:posts:launch`, out)
		require.Eventually(t, func() bool { return len(st.Purges.Purges()) > 0 }, 30*time.Second, 50*time.Millisecond, "the purge reached the (local) purge API")
	},
}

// requireNoOpenIncident waits until every incident the examples opened was
// replayed and resolved.
func requireNoOpenIncident(t *testing.T, st *devstack.Stack) {
	t.Helper()
	var page incident.Page
	require.Eventually(t, func() bool {
		page = incident.Page{}
		getJSON(t, st.URL()+"/admin/incidents?status=any", &page)
		for _, inc := range page.Incidents {
			if inc.Status != incident.StatusResolved {
				return false
			}
		}
		return len(page.Incidents) > 0
	}, 60*time.Second, 200*time.Millisecond, "every incident resolved by its replay: %s", fmt.Sprint(page.Incidents))
}
