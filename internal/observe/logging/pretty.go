package logging

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
)

// PrettyOptions configure NewPrettyHandler.
type PrettyOptions struct {
	Level slog.Leveler
	// Color adds ANSI colours (a terminal).
	Color bool
}

// PrettyHandler writes one readable line per record for a developer's
// terminal:
//
//	12:00:01.123 INFO  ingest         ingest: enqueued eventId=evt_1 tenantId=acme
//
// The "function" or "service" attribute becomes the component column;
// everything else follows as key=value, groups as dotted keys. It is safe
// for concurrent use; handlers derived with WithAttrs/WithGroup share its
// writer and lock.
type PrettyHandler struct {
	w         io.Writer
	mu        *sync.Mutex
	level     slog.Leveler
	color     bool
	component string
	prefix    string // rendered pre-set attributes
	groups    []string
}

// NewPrettyHandler returns a PrettyHandler writing to w.
func NewPrettyHandler(w io.Writer, o PrettyOptions) *PrettyHandler {
	level := o.Level
	if level == nil {
		level = slog.LevelInfo
	}
	return &PrettyHandler{w: w, mu: &sync.Mutex{}, level: level, color: o.Color}
}

// Enabled reports whether level is logged.
func (h *PrettyHandler) Enabled(_ context.Context, level slog.Level) bool {
	return level >= h.level.Level()
}

const (
	ansiReset  = "\x1b[0m"
	ansiDim    = "\x1b[2m"
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
	ansiBlue   = "\x1b[34m"
	ansiCyan   = "\x1b[36m"
	ansiBold   = "\x1b[1m"
)

// componentWidth pads the component column ("consumer-http-crm-sync" fits).
const componentWidth = 22

// Handle writes the record.
func (h *PrettyHandler) Handle(_ context.Context, r slog.Record) error {
	var b bytes.Buffer
	t := r.Time
	if t.IsZero() {
		t = time.Now()
	}
	h.paint(&b, ansiDim, t.Format("15:04:05.000"))
	b.WriteByte(' ')
	lvl, col := levelLabel(r.Level)
	h.paint(&b, col, fmt.Sprintf("%-5s", lvl))
	b.WriteByte(' ')

	component := h.component
	var attrs bytes.Buffer
	r.Attrs(func(a slog.Attr) bool {
		if len(h.groups) == 0 && isComponent(a.Key) && component == "" {
			component = a.Value.String()
			return true
		}
		h.appendAttr(&attrs, strings.Join(h.groups, "."), a)
		return true
	})
	h.paint(&b, ansiCyan, fmt.Sprintf("%-*s", componentWidth, component))
	b.WriteByte(' ')
	msg := r.Message
	if r.Level >= slog.LevelError {
		h.paint(&b, ansiBold, msg)
	} else {
		b.WriteString(msg)
	}
	b.WriteString(h.prefix)
	b.Write(attrs.Bytes())
	b.WriteByte('\n')

	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := h.w.Write(b.Bytes())
	return err
}

// WithAttrs renders attrs once, so per-record work stays small.
func (h *PrettyHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := *h
	var b bytes.Buffer
	for _, a := range attrs {
		if len(h.groups) == 0 && isComponent(a.Key) && n.component == "" {
			n.component = a.Value.String()
			continue
		}
		h.appendAttr(&b, strings.Join(h.groups, "."), a)
	}
	n.prefix = h.prefix + b.String()
	return &n
}

// WithGroup qualifies later keys with name.
func (h *PrettyHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	n := *h
	n.groups = append(append([]string(nil), h.groups...), name)
	return &n
}

func isComponent(key string) bool { return key == "function" || key == KeyService }

func (h *PrettyHandler) appendAttr(b *bytes.Buffer, group string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	key := a.Key
	if group != "" {
		key = group + "." + key
	}
	if a.Value.Kind() == slog.KindGroup {
		for _, g := range a.Value.Group() {
			h.appendAttr(b, key, g)
		}
		return
	}
	b.WriteByte(' ')
	col := ansiDim
	if a.Key == "error" {
		col = ansiRed
	}
	h.paint(b, col, key+"=")
	b.WriteString(quote(valueString(a.Value)))
}

func valueString(v slog.Value) string {
	switch v.Kind() {
	case slog.KindTime:
		return v.Time().Format(time.RFC3339Nano)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return err.Error()
		}
		return fmt.Sprint(v.Any())
	}
	return v.String()
}

// quote quotes values a reader could not tell apart otherwise.
func quote(s string) string {
	if s == "" {
		return `""`
	}
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '"' || r == '=' || !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

func levelLabel(l slog.Level) (string, string) {
	switch {
	case l >= slog.LevelError:
		return "ERROR", ansiRed
	case l >= slog.LevelWarn:
		return "WARN", ansiYellow
	case l >= slog.LevelInfo:
		return "INFO", ansiBlue
	}
	return "DEBUG", ansiDim
}

func (h *PrettyHandler) paint(b *bytes.Buffer, color, s string) {
	if h.color && color != "" {
		b.WriteString(color)
		b.WriteString(s)
		b.WriteString(ansiReset)
		return
	}
	b.WriteString(s)
}

// IsTerminal reports whether w is a terminal (a character device): where
// the pretty format is coloured and progress is redrawn in place.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
