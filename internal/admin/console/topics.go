package console

import (
	"errors"
	"net/http"

	"github.com/siteswarm/eventplatform/internal/health"
)

// topicAction pauses or resumes a topic (the overview's buttons), then
// shows the overview.
func (c *Console) topicAction(w http.ResponseWriter, r *http.Request, p page, topic, action string) {
	if c.d.Breakers == nil {
		w.WriteHeader(http.StatusNotFound)
		p.Error = "subscriber health is not configured"
		c.render(w, "error", p)
		return
	}
	ctx := r.Context()
	var err error
	switch action {
	case "pause":
		_, err = c.d.Breakers.Pause(ctx, topic, "console", r.PostFormValue("reason"))
	case "resume":
		_, err = c.d.Breakers.Resume(ctx, topic, "console")
	default:
		w.WriteHeader(http.StatusNotFound)
		p.Error = "no action " + action
		c.render(w, "error", p)
		return
	}
	switch {
	case errors.Is(err, health.ErrUnknownTopic):
		w.WriteHeader(http.StatusNotFound)
		p.Error = "no topic " + topic
		c.render(w, "error", p)
		return
	case err != nil:
		p.Flash = "Not changed: " + err.Error()
	case action == "pause":
		p.Flash = topic + " paused: its deliveries stop and its queue holds the events until you resume it"
	default:
		p.Flash = topic + " resumed: its backlog drains at a ramped concurrency"
	}
	c.overview(w, r, p)
}
