package console

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/retention"
)

// retention shows a tenant's retention policy (what it sets, what
// applies, the platform's defaults and limits) and sets it: the form
// posts the periods with the version it showed, so a change made
// meanwhile is refused rather than overwritten; a shortened period starts
// its purge, which the page links.
func (c *Console) retention(w http.ResponseWriter, r *http.Request, p page) {
	ctx := r.Context()
	p.Title, p.Nav = "Retention", "retention"
	if c.d.Retention == nil {
		p.Error = "Retention policies live in the jobs table, which is not configured on this stage."
		c.render(w, "error", p)
		return
	}
	tenant := r.URL.Query().Get("tenant")
	if r.Method == http.MethodPost {
		tenant = r.PostFormValue("tenant")
	} else if r.Method != http.MethodGet {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	data := map[string]any{"Tenant": tenant}
	p.Data = data
	if tenant == "" {
		c.render(w, "retention", p)
		return
	}
	if !envelope.ValidTenant(tenant) {
		w.WriteHeader(http.StatusBadRequest)
		p.Error = "tenant must be 1 to 64 lowercase letters, digits, _ or -"
		c.render(w, "retention", p)
		return
	}
	if r.Method == http.MethodPost {
		sp := retention.SetParams{TenantID: tenant, Actor: "console"}
		var bad string
		for name, dst := range map[string]*int{"eventsDays": &sp.EventsDays, "incidentsDays": &sp.IncidentsDays, "archivesDays": &sp.ArchivesDays, "exportsDays": &sp.ExportsDays} {
			v := r.PostFormValue(name)
			if v == "" {
				continue
			}
			n, err := strconv.Atoi(v)
			if err != nil {
				bad = name + " must be a whole number of days (empty or 0: the platform default)"
				continue
			}
			*dst = n
		}
		if v := r.PostFormValue("ifVersion"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				bad = "ifVersion must be a number"
			}
			sp.IfVersion = &n
		}
		if bad != "" {
			w.WriteHeader(http.StatusBadRequest)
			p.Error = bad
		} else if v, err := c.d.Retention.Set(ctx, sp); err != nil {
			w.WriteHeader(statusOf(err))
			p.Error = err.Error()
		} else {
			p.Flash = "Saved (version " + strconv.Itoa(v.Policy.Version) + ")"
			if v.Purge != nil {
				p.Flash += "; purge " + v.Purge.ID + " applies the shorter period to what is stored"
				data["Purge"] = v.Purge.ID
			}
		}
	}
	v, err := c.d.Retention.Get(ctx, tenant)
	if err != nil {
		if p.Error == "" {
			w.WriteHeader(statusOf(err))
		}
		p.Error = err.Error()
	} else {
		data["View"] = v
	}
	c.render(w, "retention", p)
}

// statusOf is the status of a refused request: a bad policy or tenant is
// the form's fault (400), a concurrent change a conflict (409), anything
// else the server's.
func statusOf(err error) int {
	var re *jobs.RequestError
	switch {
	case errors.As(err, &re) && re.Code == retention.CodeVersionConflict:
		return http.StatusConflict
	case errors.As(err, &re):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}
