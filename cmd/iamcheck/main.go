// Command iamcheck is `make iam-check`: it evaluates every AWS call the
// local runs recorded (EVP_IAM_RECORD) against the synthesized template's
// roles with @cloud-copilot/iam-simulate, prints the report, and exits 1
// on a denied call (internal/local/iamcheck, docs/iam.md).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/siteswarm/eventplatform/internal/local/iamcheck"
)

// The report's place in docs/iam.md (-update): between these markers,
// one pair per stage.
func markers(stage string) (begin, end string) {
	return "<!-- iam-check report of " + stage + ": make iam-check IAM_UPDATE=1 writes what follows -->",
		"<!-- end of the iam-check report of " + stage + " -->"
}

func main() {
	var (
		c       iamcheck.Config
		report  string
		details string
		update  string
	)
	flag.StringVar(&c.Template, "template", "", "the stage's synthesized template (cdk.out/<stage>/evp-<stage>.template.json)")
	flag.StringVar(&c.Recordings, "calls", ".cache/iam-calls", "the recordings' directory")
	flag.StringVar(&c.Simulator, "simulator", "scripts/iam-check/simulate.mjs", "the evaluator script")
	flag.StringVar(&report, "report", "", "also write the report to this file")
	flag.StringVar(&details, "details", "", "write every distinct request with its decision to this file")
	flag.StringVar(&update, "update", "", "replace the report section of this Markdown file (docs/iam.md)")
	flag.Parse()

	res, err := iamcheck.Check(context.Background(), c)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var b bytes.Buffer
	if err := res.Report(&b, c.Template); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Stdout.Write(b.Bytes())
	write := func(path string, data []byte) {
		if path == "" {
			return
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	write(report, b.Bytes())
	if details != "" {
		var d bytes.Buffer
		_ = res.Details(&d)
		write(details, d.Bytes())
	}
	if update != "" {
		doc, err := os.ReadFile(update)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		beginMarker, endMarker := markers(res.Stage.Prefix)
		before, rest, ok1 := strings.Cut(string(doc), beginMarker)
		_, after, ok2 := strings.Cut(rest, endMarker)
		if !ok1 || !ok2 {
			fmt.Fprintf(os.Stderr, "%s has no report markers for %s (%s … %s)\n", update, res.Stage.Prefix, beginMarker, endMarker)
			os.Exit(2)
		}
		write(update, []byte(before+beginMarker+"\n\n"+b.String()+endMarker+after))
	}
	if len(res.Failures) > 0 {
		fmt.Fprintf(os.Stderr, "make iam-check: %d failures (%d denied calls)\n", len(res.Failures), len(res.Denied()))
		os.Exit(1)
	}
}
