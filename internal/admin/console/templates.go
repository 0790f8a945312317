package console

import (
	"bytes"
	"embed"
	"encoding/json"
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
	"ts": func(t time.Time) string {
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
