package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/siteswarm/eventplatform/internal/observe/logging"
)

// Operator output is deterministic (absolute UTC times, no terminal
// widths) so scripts can read it and golden tests can pin it.

const timeLayout = "2006-01-02T15:04:05Z"

func ts(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(timeLayout)
}

// tableWriter aligns tab-separated cells and trims the padding tabwriter
// leaves after an empty last cell.
type tableWriter struct {
	out io.Writer
	buf bytes.Buffer
	tw  *tabwriter.Writer
}

func table(w io.Writer) *tableWriter {
	t := &tableWriter{out: w}
	t.tw = tabwriter.NewWriter(&t.buf, 0, 0, 2, ' ', 0)
	return t
}

func (t *tableWriter) Write(p []byte) (int, error) { return t.tw.Write(p) }

// Flush writes the aligned table.
func (t *tableWriter) Flush() error {
	if err := t.tw.Flush(); err != nil {
		return err
	}
	for _, line := range strings.SplitAfter(t.buf.String(), "\n") {
		if line == "" {
			continue
		}
		nl := strings.HasSuffix(line, "\n")
		line = strings.TrimRight(line, " \n")
		if nl {
			line += "\n"
		}
		if _, err := io.WriteString(t.out, line); err != nil {
			return err
		}
	}
	t.buf.Reset()
	return nil
}

// clip shortens s to n runes on one line.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func size(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// pretty indents JSON (prefix on every line), or returns it as is.
func pretty(raw []byte, prefix string) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, prefix, "  "); err != nil {
		return prefix + string(raw)
	}
	return prefix + buf.String()
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// progressBar renders "[=====>    ] 12/40" on w: redrawn in place on a
// terminal, else (a pipe, a log, CI) a line each time the count moves, so
// no carriage returns land in a file.
type progressBar struct {
	w     io.Writer
	total int
	label string
	// last is the count last drawn (-1: none yet).
	last int
	// tty is set on the first draw.
	tty, started bool
}

func (p *progressBar) draw(done int) {
	if !p.started {
		p.started, p.tty, p.last = true, logging.IsTerminal(p.w), -1
	}
	if !p.tty && done == p.last {
		return
	}
	p.last = done
	line := p.line(done)
	if p.tty {
		fmt.Fprintf(p.w, "\r%s", line)
		return
	}
	fmt.Fprintln(p.w, line)
}

func (p *progressBar) line(done int) string {
	const width = 30
	if p.total <= 0 {
		return fmt.Sprintf("%s %d", p.label, done)
	}
	filled := min(done*width/p.total, width)
	bar := strings.Repeat("=", filled)
	if filled < width {
		bar += ">" + strings.Repeat(" ", width-filled-1)
	}
	return fmt.Sprintf("%s [%s] %d/%d", p.label, bar, done, p.total)
}

// finish ends the redrawn line on a terminal.
func (p *progressBar) finish() {
	if p.tty {
		fmt.Fprintln(p.w)
	}
}
