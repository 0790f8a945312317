package console

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"time"
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
	"q":     url.QueryEscape,
}).ParseFS(files, "*.html"))

func (c *Console) render(w http.ResponseWriter, name string, p page) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := templates.ExecuteTemplate(w, name, p); err != nil {
		c.d.Log.Error("admin: console template", "template", name, "error", err)
	}
}
