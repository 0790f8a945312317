package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/siteswarm/eventplatform/internal/admin"
	"github.com/siteswarm/eventplatform/internal/jobs"
)

// jobRow is a job as the jobs pages show it.
type jobRow struct {
	admin.JobView
	Created, Updated, Finished time.Time
	// Percent is the progress's share done (-1: no total to compare).
	Percent int
	// Fields are the result's members, readable; Downloads the finished
	// export's objects.
	Fields    []resultField
	Downloads []download
	// DownloadError says why a finished export's objects are not listed.
	DownloadError string
	// Cancellable, Restartable: what the job's status allows (cancel
	// while it runs; restart a failed, cancelled or stuck job, not a
	// completed one).
	Cancellable, Restartable bool
}

// resultField is one member of a job's result.
type resultField struct {
	Name string
	// Text is a scalar's value; JSON an object's or a list's, indented.
	Text, JSON string
}

// download is one object of a finished export.
type download struct {
	Name, Key, Records string
	Bytes, Count       int
}

// jobs lists recent jobs (or by tenant, kind and status) with their
// status and progress, shows one job (its result readable, a finished
// export's downloads), and cancels or restarts it.
func (c *Console) jobs(w http.ResponseWriter, r *http.Request, p page, segs []string) {
	ctx := r.Context()
	p.Title, p.Nav = "Jobs", "jobs"
	if c.d.Jobs == nil {
		p.Error = "The job engine is not configured on this stage."
		c.render(w, "error", p)
		return
	}
	if len(segs) == 2 && segs[1] == "download" && r.Method == http.MethodGet {
		c.jobDownload(w, r, p, segs[0])
		return
	}
	if len(segs) >= 1 {
		id := segs[0]
		if len(segs) == 2 && r.Method == http.MethodPost {
			var err error
			switch segs[1] {
			case "cancel":
				_, err = c.d.Jobs.Cancel(ctx, id)
				p.Flash = "Cancelled"
			case "restart":
				_, err = c.d.Jobs.Restart(ctx, id, jobs.RestartParams{FromScratch: r.PostFormValue("fromScratch") == "on", Note: "console"})
				p.Flash = "Restarted"
			default:
				err = fmt.Errorf("no action %s", segs[1])
			}
			if err != nil {
				p.Flash, p.Error = "", err.Error()
			}
		} else if len(segs) != 1 || r.Method != http.MethodGet {
			w.WriteHeader(http.StatusNotFound)
			p.Error = "no such jobs page"
			c.render(w, "error", p)
			return
		}
		j, err := c.d.Jobs.Get(ctx, id)
		if err != nil {
			w.WriteHeader(http.StatusNotFound)
			p.Error = err.Error()
			c.render(w, "error", p)
			return
		}
		row := rowOf(j)
		row.Fields = resultFields(j.Result)
		if c.d.Exports != nil && j.Status == jobs.StatusCompleted {
			var re *jobs.RequestError
			d, err := c.d.Exports.Objects(ctx, j.ID)
			switch {
			case errors.As(err, &re) && re.Code == admin.CodeNotDownloadable:
				// Not an export: nothing to download.
			case err != nil:
				row.DownloadError = err.Error()
			default:
				for _, o := range d.Objects {
					row.Downloads = append(row.Downloads, download{Name: o.Name, Key: o.Key, Records: o.Records, Bytes: o.Bytes, Count: o.Count})
				}
			}
		}
		p.Title, p.Data = "Job "+id, row
		c.render(w, "job", p)
		return
	}
	if r.Method != http.MethodGet {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	data := map[string]any{"Q": q, "Kinds": admin.JobKinds(c.d.Jobs), "Statuses": []jobs.Status{jobs.StatusQueued, jobs.StatusRunning,
		jobs.StatusWaiting, jobs.StatusCompleted, jobs.StatusFailed, jobs.StatusCancelled}}
	// Jobs a page at a time, newest first: by tenant, kind and status, or
	// (none named) every tenant's of every kind (admin.JobFilter), each with
	// its status and progress; without a filter the unfinished and failed
	// ones are counted above them.
	f := admin.JobFilter(q)
	f.Limit = jobsPage
	pg, err := c.d.Jobs.List(ctx, f)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		p.Error = err.Error()
	}
	rows := make([]jobRow, 0, len(pg.Jobs))
	for _, j := range pg.Jobs {
		rows = append(rows, rowOf(j))
	}
	data["Jobs"], data["Pager"] = rows, pagerOf("/jobs", q, pg.Cursor, pg.Prev)
	if q.Get("tenant") == "" && q.Get("kind") == "" && q.Get("status") == "" {
		data["Counts"] = c.jobCounts(ctx)
	} else {
		data["Filtered"] = true
	}
	p.Data = data
	c.render(w, "jobs", p)
}

func rowOf(j jobs.Job) jobRow {
	row := jobRow{JobView: admin.ViewOfJob(j), Created: j.CreatedAt, Updated: j.UpdatedAt, Finished: j.FinishedAt, Percent: -1,
		Cancellable: !j.Status.Terminal(), Restartable: j.Status != jobs.StatusCompleted}
	if pr := j.Progress; pr != nil && pr.Total > 0 {
		row.Percent = int(min(100, pr.Done*100/pr.Total))
	}
	if j.Status == jobs.StatusCompleted {
		row.Percent = 100
	}
	return row
}

// resultFields are a result object's members in order, scalars as text
// and the rest as indented JSON; a result that is no object is one field.
func resultFields(raw json.RawMessage) []resultField {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return []resultField{{Name: "result", JSON: indent(raw)}}
	}
	var out []resultField
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			break
		}
		name, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			break
		}
		f := resultField{Name: words(name)}
		var scalar any
		switch {
		case len(v) > 0 && (v[0] == '{' || v[0] == '['):
			f.JSON = indent(v)
		case json.Unmarshal(v, &scalar) == nil:
			f.Text = fmt.Sprint(scalar)
			if ts, err := time.Parse(time.RFC3339Nano, f.Text); err == nil {
				f.Text = ts.UTC().Format("2006-01-02 15:04:05Z")
			}
		default:
			f.Text = string(v)
		}
		out = append(out, f)
	}
	return out
}

func indent(raw []byte) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

// words spells a camelCase member name as words ("manifestKey" →
// "manifest key").
func words(name string) string {
	var b strings.Builder
	for i, r := range name {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte(' ')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// jobDownload signs a URL for one object of a finished export and sends
// the browser to it: a fresh short-lived URL per click, nothing proxied.
func (c *Console) jobDownload(w http.ResponseWriter, r *http.Request, p page, id string) {
	if c.d.Exports == nil {
		w.WriteHeader(http.StatusNotFound)
		p.Error = "export downloads are not configured"
		c.render(w, "error", p)
		return
	}
	u, err := c.d.Exports.Link(r.Context(), id, r.URL.Query().Get("key"))
	if err != nil {
		w.WriteHeader(http.StatusNotFound)
		p.Error = err.Error()
		c.render(w, "error", p)
		return
	}
	http.Redirect(w, r, u, http.StatusSeeOther)
}

// jobsPage is how many jobs a console page lists.
const jobsPage = 50
