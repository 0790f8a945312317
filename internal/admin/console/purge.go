package console

import "net/http"

// purge shows today's cache purges, recent dead letters and one purge job.
func (c *Console) purge(w http.ResponseWriter, r *http.Request, p page) {
	ctx := r.Context()
	p.Title, p.Nav = "Cache purges", "purge"
	data := map[string]any{}
	if c.d.Purge == nil {
		p.Error = "The cache purge service is not configured on this stage."
	} else {
		if id := r.URL.Query().Get("job"); id != "" {
			j, err := c.d.Purge.Job(ctx, id)
			if err != nil || j == nil {
				p.Error = "No purge job " + id + " (unknown, or older than 24 hours)"
			}
			data["Job"] = j
		}
		days, err := c.d.Purge.Daily(ctx, c.d.Purge.Today())
		if err != nil {
			p.Error = err.Error()
		}
		dls, _ := c.d.Purge.RecentDeadLetters(ctx, 50)
		data["Today"], data["DeadLetters"] = days, dls
	}
	p.Data = data
	c.render(w, "purge", p)
}
