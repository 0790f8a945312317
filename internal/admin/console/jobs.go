package console

import (
	"fmt"
	"net/http"

	"github.com/siteswarm/eventplatform/internal/admin"
	"github.com/siteswarm/eventplatform/internal/jobs"
)

// jobs lists jobs by tenant or kind (counts by kind and status
// otherwise), shows one job, and cancels or restarts it.
func (c *Console) jobs(w http.ResponseWriter, r *http.Request, p page, segs []string) {
	ctx := r.Context()
	p.Title, p.Nav = "Jobs", "jobs"
	if c.d.Jobs == nil {
		p.Error = "The job engine is not configured on this stage."
		c.render(w, "error", p)
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
		p.Title, p.Data = "Job "+id, admin.ViewOfJob(j)
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
	// A tenant, a kind or a status lists jobs (across tenants and kinds
	// when neither is named: admin.JobFilter), a page at a time.
	if q.Get("tenant") != "" || q.Get("kind") != "" || q.Get("status") != "" {
		f := admin.JobFilter(q)
		f.Limit = jobsPage
		pg, err := c.d.Jobs.List(ctx, f)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			p.Error = err.Error()
		}
		views := []admin.JobView{}
		for _, j := range pg.Jobs {
			views = append(views, admin.ViewOfJob(j))
		}
		data["Jobs"], data["Listed"], data["Pager"] = views, true, pagerOf("/jobs", q, pg.Cursor, pg.Prev)
	} else {
		data["Counts"] = c.jobCounts(ctx)
	}
	p.Data = data
	c.render(w, "jobs", p)
}

// jobsPage is how many jobs a console page lists.
const jobsPage = 50
