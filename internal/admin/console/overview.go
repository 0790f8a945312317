package console

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/siteswarm/eventplatform/internal/admin"
	"github.com/siteswarm/eventplatform/internal/health"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/jobs"
)

// topicHealth is one row of the overview.
type topicHealth struct {
	admin.QueueDepth
	Consumer  string
	Open      int
	OpenMore  bool
	Unhealthy bool
	// Health is the subscriber's breaker (nil: not configured).
	Health *health.View
	// Breaker: the topic can be paused and resumed.
	Breaker bool
}

// hourBar is one hour of the incidents chart.
type hourBar struct {
	X, H   int
	Y      int
	Tip    string
	Marker bool
}

// overview is the front page: per-topic health (unhealthy first), the
// incidents opened per hour over 48 hours, today's purges and the jobs.
func (c *Console) overview(w http.ResponseWriter, r *http.Request, p page) {
	ctx := r.Context()
	p.Title, p.Nav = "Overview", "overview"
	data := map[string]any{}
	var topics []topicHealth
	states := map[string]health.View{}
	if c.d.Breakers != nil {
		if list, err := c.d.Breakers.List(ctx); err != nil {
			p.Error = "subscriber health: " + err.Error()
		} else {
			for _, v := range list {
				states[v.Topic] = v.Health
			}
		}
	}
	if depths, err := c.d.Queues.Depths(ctx); err != nil {
		p.Error = "queue depths: " + err.Error()
	} else {
		for _, d := range depths {
			th := topicHealth{QueueDepth: d}
			if tp, ok := c.d.Topology.Topic(d.Topic); ok {
				th.Consumer, th.Breaker = string(tp.Consumer), !tp.Breaker.Off && c.d.Breakers != nil
			}
			if v, ok := states[d.Topic]; ok {
				th.Health = &v
			}
			pg, err := c.d.Incidents.List(ctx, incident.Filter{Status: incident.StatusOpen, Topic: d.Topic, Limit: 100})
			if err == nil {
				th.Open, th.OpenMore = len(pg.Incidents), pg.Cursor != ""
			}
			th.Unhealthy = th.Open > 0 || th.DeadLetters > 0 || (th.Health != nil && th.Health.State != health.Closed)
			topics = append(topics, th)
		}
	}
	sort.SliceStable(topics, func(i, j int) bool {
		if topics[i].Unhealthy != topics[j].Unhealthy {
			return topics[i].Unhealthy
		}
		return topics[i].Open+topics[i].DeadLetters > topics[j].Open+topics[j].DeadLetters
	})
	data["Topics"] = topics

	// Incidents opened per hour, last 48 hours.
	now := c.d.Now().UTC().Truncate(time.Hour)
	since := now.Add(-47 * time.Hour)
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
	peak := 1
	for _, n := range counts {
		peak = max(peak, n)
	}
	var bars []hourBar
	total := 0
	for i := range 48 {
		h := since.Add(time.Duration(i) * time.Hour)
		n := counts[h]
		total += n
		height := n * 80 / peak
		bars = append(bars, hourBar{X: i * 10, H: height, Y: 90 - height, Tip: fmt.Sprintf("%s: %d", h.Format("Jan 2 15:00"), n), Marker: h.Hour() == 0})
	}
	data["Bars"], data["IncidentsTotal"], data["Peak"] = bars, total, peak

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
