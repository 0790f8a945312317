package console

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/siteswarm/eventplatform/internal/outbox"
)

//go:embed *.html *.css
var files embed.FS

var templates = template.Must(template.New("console").Funcs(template.FuncMap{
	// ts shows a time to the second, in UTC: a time.Time, or the RFC 3339
	// string of a JSON view (the jobs' views carry nanoseconds).
	"ts": func(v any) string {
		var t time.Time
		switch x := v.(type) {
		case time.Time:
			t = x
		case string:
			if x == "" {
				return "—"
			}
			p, err := time.Parse(time.RFC3339Nano, x)
			if err != nil {
				return x
			}
			t = p
		default:
			return fmt.Sprint(v)
		}
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"pretty": func(raw []byte) string {
		var buf bytes.Buffer
		if json.Indent(&buf, raw, "", "  ") != nil {
			return string(raw)
		}
		return buf.String()
	},
	"large": func(raw []byte) bool { return len(raw) > 4<<10 },
	// ms is a duration in milliseconds as a person reads it.
	"ms": func(ms int64) string {
		if ms < 1000 {
			return strconv.FormatInt(ms, 10) + " ms"
		}
		return strconv.FormatFloat(float64(ms)/1000, 'f', 1, 64) + " s"
	},
	"add": func(a, b int) int { return a + b },
	// bytes is a size as a person reads it.
	"bytes": func(n int) string {
		switch {
		case n >= 1<<20:
			return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
		case n >= 1<<10:
			return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
		}
		return strconv.Itoa(n) + " B"
	},
	"sub": func(a, b int) int { return a - b },
	// lat is a latency percentile ("—" without deliveries to measure).
	"lat": func(d time.Duration, n int) string {
		if n == 0 {
			return "—"
		}
		return humanDuration(d)
	},
	"plural": plural,
	// outcome is an attempt's outcome in words.
	"outcome": func(o outbox.AttemptOutcome) string { return strings.ReplaceAll(string(o), "_", " ") },
	"q":       url.QueryEscape,
}).ParseFS(files, "*.html"))

func (c *Console) render(w http.ResponseWriter, name string, p page) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := templates.ExecuteTemplate(w, name, p); err != nil {
		c.d.Log.Error("admin: console template", "template", name, "error", err)
	}
}

// humanDuration is a duration in the unit a person reads it in.
func humanDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	case d < 2*time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	case d < 2*time.Hour:
		return strconv.Itoa(int(d.Minutes())) + " min"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d.Hours())) + " h"
	}
	return strconv.Itoa(int(d.Hours()/24)) + " d"
}
