package console

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/siteswarm/eventplatform/internal/subscriberhealth"
)

// topicsAction pauses or resumes the topic its button names (the
// overview's one form: pause=<topic> or resume=<topic>, the reason shared),
// then sends the browser back to the overview (so its refresh reloads the
// overview, not the action).
func (c *Console) topicsAction(w http.ResponseWriter, r *http.Request, p page) {
	f := r.PostForm
	switch {
	case f.Get("pause") != "":
		c.topicAction(w, r, p, f.Get("pause"), "pause")
	case f.Get("resume") != "":
		c.topicAction(w, r, p, f.Get("resume"), "resume")
	default:
		w.WriteHeader(http.StatusBadRequest)
		p.Title, p.Error = "Bad request", "name a topic to pause or resume"
		c.render(w, "error", p)
	}
}

// topicAction pauses or resumes a topic, then redirects to the overview,
// which says what changed.
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
	case errors.Is(err, subscriberhealth.ErrUnknownTopic):
		w.WriteHeader(http.StatusNotFound)
		p.Error = "no topic " + topic
		c.render(w, "error", p)
		return
	case err != nil:
		p.Flash = "Not changed: " + err.Error()
		c.overview(w, r, p)
		return
	}
	done := "paused"
	if action == "resume" {
		done = "resumed"
	}
	http.Redirect(w, r, Prefix+"?"+url.Values{done: {topic}}.Encode(), http.StatusSeeOther)
}

// noticeOf is the flash of an overview a topic action redirected to (a
// topic of the topology only: the link is no place for free text).
func (c *Console) noticeOf(q url.Values) string {
	known := func(t string) bool { _, ok := c.d.Topology.Topic(t); return ok }
	switch {
	case known(q.Get("paused")):
		return q.Get("paused") + " paused: its deliveries stop and its queue holds the events until you resume it"
	case known(q.Get("resumed")):
		return q.Get("resumed") + " resumed: its backlog drains at a ramped concurrency"
	}
	return ""
}
