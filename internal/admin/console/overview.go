package console

import (
	"context"
	"net/http"
	"sort"
	"time"

	"github.com/siteswarm/eventplatform/internal/admin"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/kit/truncate"
	"github.com/siteswarm/eventplatform/internal/subscriberhealth"
)

// RefreshEvery is how often the overview reloads itself (a meta refresh:
// the page runs no script), so a console left open stays current.
const RefreshEvery = time.Minute

// deliveryWindow is the overview's window of delivery figures.
const deliveryWindow = time.Hour

// topicHealth is one row of the overview.
type topicHealth struct {
	admin.QueueDepth
	Consumer  string
	Open      int
	OpenMore  bool
	Unhealthy bool
	// Health is the subscriber's breaker (nil: not configured).
	Health *subscriberhealth.View
	// Breaker: the topic can be paused and resumed.
	Breaker bool
	// Paused: its breaker is paused (by an operator).
	Paused bool
	// Deliveries are the last hour's figures (nil: not known).
	Deliveries *admin.TopicDeliveries
	// LastError is the topic's latest failure, shown in full (clipped):
	// the breaker's (a transient failure, its answer named by length and
	// hash), else the newest open incident's; LastErrorAt when, LastIncident
	// the incident it came from.
	LastError    string
	LastErrorAt  time.Time
	LastIncident string
}

// overview is the front page: per-topic health and the last hour's
// deliveries (unhealthy first), the incidents opened per hour over 48
// hours, today's purges and the jobs. It reloads itself every
// RefreshEvery.
func (c *Console) overview(w http.ResponseWriter, r *http.Request, p page) {
	ctx := r.Context()
	p.Title, p.Nav, p.Refresh = "Overview", "overview", int(RefreshEvery/time.Second)
	if p.Flash == "" {
		p.Flash = c.noticeOf(r.URL.Query())
	}
	now := c.d.Now().UTC()
	data := map[string]any{"Rendered": now, "RefreshEvery": RefreshEvery, "Window": deliveryWindow}
	var topics []topicHealth
	states := map[string]subscriberhealth.View{}
	if c.d.Breakers != nil {
		if list, err := c.d.Breakers.List(ctx); err != nil {
			p.Error = "subscriber health: " + err.Error()
		} else {
			for _, v := range list {
				states[v.Topic] = v.Health
			}
		}
	}
	depths, err := c.d.Queues.Depths(ctx)
	if err != nil {
		p.Error = "queue depths: " + err.Error()
	}
	var delivered map[string]admin.TopicDeliveries
	if c.d.Deliveries != nil && len(depths) > 0 {
		names := make([]string, len(depths))
		for i, d := range depths {
			names[i] = d.Topic
		}
		if delivered, err = c.d.Deliveries.Deliveries(ctx, names, now.Add(-deliveryWindow), now); err != nil {
			c.d.Log.WarnContext(ctx, "console: delivery figures", "error", err.Error())
			data["DeliveriesError"] = err.Error()
		}
		data["Deliveries"] = true
	}
	for _, d := range depths {
		th := topicHealth{QueueDepth: d}
		if tp, ok := c.d.Topology.Topic(d.Topic); ok {
			th.Consumer, th.Breaker = string(tp.Consumer), !tp.Breaker.Off && c.d.Breakers != nil
		}
		if v, ok := states[d.Topic]; ok {
			th.Health, th.Paused = &v, v.State == subscriberhealth.Paused
			if v.LastError != "" {
				th.LastError, th.LastErrorAt = v.LastError, v.FailedAt
			}
		}
		if f, ok := delivered[d.Topic]; ok {
			th.Deliveries = &f
		}
		pg, err := c.d.Incidents.List(ctx, incident.Filter{Status: incident.StatusOpen, Topic: d.Topic, Limit: 100})
		if err == nil {
			th.Open, th.OpenMore = len(pg.Incidents), pg.Cursor != ""
			// Newest failure first: the first is the latest.
			if len(pg.Incidents) > 0 && pg.Incidents[0].LastFailedAt.After(th.LastErrorAt) {
				inc := pg.Incidents[0]
				th.LastError, th.LastErrorAt, th.LastIncident = inc.ErrorCode+": "+inc.ErrorMessage, inc.LastFailedAt, inc.ID
			}
		}
		th.LastError = truncate.String(th.LastError, 140)
		th.Unhealthy = th.Open > 0 || th.DeadLetters > 0 || (th.Health != nil && th.Health.State != subscriberhealth.Closed)
		topics = append(topics, th)
	}
	sort.SliceStable(topics, func(i, j int) bool {
		if topics[i].Unhealthy != topics[j].Unhealthy {
			return topics[i].Unhealthy
		}
		return topics[i].Open+topics[i].DeadLetters > topics[j].Open+topics[j].DeadLetters
	})
	data["Topics"] = topics
	data["Pausable"] = c.d.Breakers != nil

	// Incidents opened per hour, last 48 hours.
	hour := now.Truncate(time.Hour)
	since := hour.Add(-47 * time.Hour)
	counts := map[time.Time]int{}
	cursor := ""
	for range 10 {
		pg, err := c.d.Incidents.List(ctx, incident.Filter{Since: since, Limit: 100, Cursor: cursor})
		if err != nil {
			break
		}
		for _, inc := range pg.Incidents {
			counts[inc.CreatedAt.UTC().Truncate(time.Hour)]++
		}
		if cursor = pg.Cursor; cursor == "" {
			break
		}
	}
	data["Chart"] = incidentChart(since, counts)

	if c.d.Purge != nil {
		if days, err := c.d.Purge.Daily(ctx, c.d.Purge.Today()); err == nil {
			data["PurgeToday"] = days
		}
		if dls, err := c.d.Purge.RecentDeadLetters(ctx, 100); err == nil {
			data["PurgeDeadLetters"] = len(dls)
		}
	}
	if c.d.Jobs != nil {
		data["Jobs"] = c.jobCounts(ctx)
	}
	p.Data = data
	c.render(w, "overview", p)
}

// jobCount is how many jobs of a kind are in a status.
type jobCount struct {
	Kind, Status string
	Count        int
	More         bool
}

func (c *Console) jobCounts(ctx context.Context) []jobCount {
	var out []jobCount
	for _, kind := range admin.JobKinds(c.d.Jobs) {
		for _, st := range []jobs.Status{jobs.StatusFailed, jobs.StatusRunning, jobs.StatusQueued, jobs.StatusWaiting} {
			pg, err := c.d.Jobs.List(ctx, jobs.ListParams{Kind: kind, Status: st, Limit: 100})
			if err != nil || len(pg.Jobs) == 0 {
				continue
			}
			out = append(out, jobCount{Kind: kind, Status: string(st), Count: len(pg.Jobs), More: pg.Cursor != ""})
		}
	}
	return out
}
