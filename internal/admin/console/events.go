package console

import (
	"net/http"

	"github.com/siteswarm/eventplatform/internal/admin"
	"github.com/siteswarm/eventplatform/internal/operator"
)

// events shows one event (by id, with its tenant for an internal
// producer's) or pages a tenant's recent events.
func (c *Console) events(w http.ResponseWriter, r *http.Request, p page, segs []string) {
	ctx := r.Context()
	p.Title, p.Nav = "Events", "events"
	q := r.URL.Query()
	tenant := q.Get("tenant")
	id := q.Get("id")
	if len(segs) == 1 {
		id = segs[0]
	}
	data := map[string]any{"Tenant": tenant, "ID": id}
	if id != "" {
		v, err := c.d.Views.ViewEvent(ctx, operator.EventQuery{TenantID: tenant, EventID: id, Payload: true})
		switch {
		case admin.IsNotFound(err):
			w.WriteHeader(http.StatusNotFound)
			p.Error = "No event " + id + " in the ledger" + map[bool]string{true: " (an internal producer's event needs its tenant)", false: ""}[tenant == ""]
		case err != nil:
			p.Error = err.Error()
		default:
			p.Title = "Event " + id
			data["Event"] = v
		}
	} else if tenant != "" {
		pg, err := c.d.Views.ListEvents(ctx, operator.TenantQuery{TenantID: tenant, Limit: 50, Cursor: q.Get("cursor")})
		if err != nil {
			p.Error = err.Error()
		}
		data["Page"] = pg
	}
	p.Data = data
	c.render(w, "events", p)
}
