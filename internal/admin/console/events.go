package console

import (
	"errors"
	"net/http"

	"github.com/siteswarm/eventplatform/internal/kit/pagecursor"
	"github.com/siteswarm/eventplatform/internal/replay"

	"github.com/siteswarm/eventplatform/internal/admin"
	"github.com/siteswarm/eventplatform/internal/operator"
)

// events shows one event (by id, with its tenant for an internal
// producer's) or searches a tenant's events (the JSON API's filter:
// admin.EventFilter), a page at a time.
func (c *Console) events(w http.ResponseWriter, r *http.Request, p page, segs []string) {
	ctx := r.Context()
	p.Title, p.Nav = "Events", "events"
	q := r.URL.Query()
	tenant := q.Get("tenant")
	id := q.Get("id")
	if len(segs) == 1 {
		id = segs[0]
	}
	data := map[string]any{"Tenant": tenant, "ID": id, "Q": q, "Statuses": operator.EventStatuses}
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
		f, err := admin.EventFilter(q, c.d.Now())
		if err == nil {
			if f.Limit == 0 {
				f.Limit = eventsPage
			}
			var pg operator.EventPage
			if pg, err = c.d.Views.ListEvents(ctx, f); err == nil {
				data["Page"], data["Pager"] = pg, pagerOf("/events", q, pg.Next, pg.Prev)
			}
		}
		if err != nil {
			w.WriteHeader(listStatus(err))
			p.Error = err.Error()
		}
	}
	p.Data = data
	c.render(w, "events", p)
}

// eventsPage is how many events a console page lists.
const eventsPage = 50

// listStatus is the HTTP status of a listing that failed: the caller's
// filter or cursor (400), or the platform.
func listStatus(err error) int {
	if replay.IsRequestError(err) || errors.Is(err, pagecursor.ErrInvalid) {
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}
