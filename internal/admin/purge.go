package admin

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/siteswarm/eventplatform/internal/cachepurge"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// PurgeViews are the cache purge service's operator views (implemented by
// *purge.Views).
type PurgeViews interface {
	Job(ctx context.Context, id string) (*cachepurge.Job, error)
	Today() string
	Daily(ctx context.Context, day string) ([]cachepurge.Daily, error)
	RecentDeadLetters(ctx context.Context, limit int) ([]cachepurge.DeadLetter, error)
}

// purgeRoutes serves /admin/purge/* (spec 001 §9.2) in the service's own
// answer shape: {ok:true,…} or {ok:false,error:…}.
func (a *API) purgeRoutes(ctx context.Context, method string, segs []string, q map[string][]string) events.APIGatewayV2HTTPResponse {
	if a.d.Purge == nil {
		return purgeProblem(http.StatusNotFound, "not_found", "the cache purge service is not configured")
	}
	if method != http.MethodGet && method != http.MethodHead {
		r := purgeProblem(http.StatusMethodNotAllowed, "method_not_allowed", method+" is not allowed here; use GET")
		r.Headers = map[string]string{"Allow": http.MethodGet}
		return r
	}
	switch {
	case len(segs) == 1 && segs[0] == "health":
		return a.purgeHealth(ctx)
	case len(segs) == 2 && segs[0] == "queues" && segs[1] == "status":
		return a.purgeStatus(ctx)
	case len(segs) == 2 && segs[0] == "queues" && segs[1] == "dlq":
		limit := 50
		if v := first(q["limit"]); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > cachepurge.MaxDeadLetters {
				return purgeProblem(http.StatusBadRequest, "invalid_limit", "limit must be 1.."+strconv.Itoa(cachepurge.MaxDeadLetters))
			}
			limit = n
		}
		dls, err := a.d.Purge.RecentDeadLetters(ctx, limit)
		if err != nil {
			a.d.Log.ErrorContext(ctx, "admin: purge dead letters", "error", err)
			return purgeProblem(http.StatusInternalServerError, "internal", "internal error; see the admin-api logs")
		}
		if dls == nil {
			dls = []cachepurge.DeadLetter{}
		}
		return reply(http.StatusOK, map[string]any{"ok": true, "deadLetters": dls, "limit": limit})
	case len(segs) == 2 && segs[0] == "jobs":
		job, err := a.d.Purge.Job(ctx, segs[1])
		if err != nil {
			a.d.Log.ErrorContext(ctx, "admin: purge job", "jobId", segs[1], "error", err)
			return purgeProblem(http.StatusInternalServerError, "internal", "internal error; see the admin-api logs")
		}
		if job == nil {
			return purgeProblem(http.StatusNotFound, "not_found", "no purge job "+segs[1]+" (jobs are kept 24 hours)")
		}
		return reply(http.StatusOK, map[string]any{"ok": true, "job": job})
	}
	return purgeProblem(http.StatusNotFound, "not_found", "no purge admin route GET /admin/purge/"+strings.Join(segs, "/"))
}

// purgeHealth probes the purge table and the purge topics' queues.
func (a *API) purgeHealth(ctx context.Context) events.APIGatewayV2HTTPResponse {
	results := a.probe(ctx, a.d.PurgeChecks)
	status, code := "healthy", http.StatusOK
	for _, r := range results {
		if r != "ok" {
			status, code = "degraded", http.StatusServiceUnavailable
		}
	}
	return reply(code, map[string]any{"ok": code == http.StatusOK, "status": status, "checks": results, "time": a.d.Now().UTC()})
}

// purgeQueue is a purge topic's settings next to its live depth.
type purgeQueue struct {
	QueueDepth
	BatchSize         int     `json:"maxBatchSize"`
	BatchWindowSec    float64 `json:"maxBatchTimeoutSeconds"`
	MaxReceiveCount   int     `json:"maxRetries"`
	VisibilitySeconds float64 `json:"visibilityTimeoutSeconds"`
}

// purgeStatus reports the queue settings, today's rollups per tenant and
// the dead-letter volume.
func (a *API) purgeStatus(ctx context.Context) events.APIGatewayV2HTTPResponse {
	depths, err := a.d.Queues.Depths(ctx)
	if err != nil {
		a.d.Log.ErrorContext(ctx, "admin: purge queue depths", "error", err)
		return purgeProblem(http.StatusInternalServerError, "internal", "internal error; see the admin-api logs")
	}
	var queues []purgeQueue
	deadLetters := 0
	for _, d := range depths {
		tp, ok := a.d.Topology.Topic(d.Topic)
		if !ok || tp.Consumer != topology.ConsumerPurge {
			continue
		}
		deadLetters += d.DeadLetters
		queues = append(queues, purgeQueue{QueueDepth: d, BatchSize: tp.BatchSize, BatchWindowSec: tp.BatchWindow.Seconds(),
			MaxReceiveCount: tp.MaxReceiveCount, VisibilitySeconds: tp.VisibilityTimeout.Seconds()})
	}
	today := a.d.Purge.Today()
	rollups, err := a.d.Purge.Daily(ctx, today)
	if err != nil {
		a.d.Log.ErrorContext(ctx, "admin: purge rollups", "error", err)
		return purgeProblem(http.StatusInternalServerError, "internal", "internal error; see the admin-api logs")
	}
	slices.SortFunc(rollups, func(x, y cachepurge.Daily) int { return y.Purges - x.Purges })
	total := cachepurge.Daily{Day: today}
	for _, r := range rollups {
		total.Purges, total.Tags, total.Retries429, total.Failures = total.Purges+r.Purges, total.Tags+r.Tags, total.Retries429+r.Retries429, total.Failures+r.Failures
	}
	recent, err := a.d.Purge.RecentDeadLetters(ctx, cachepurge.MaxDeadLetters)
	if err != nil {
		a.d.Log.ErrorContext(ctx, "admin: purge dead letters", "error", err)
		return purgeProblem(http.StatusInternalServerError, "internal", "internal error; see the admin-api logs")
	}
	if queues == nil {
		queues = []purgeQueue{}
	}
	if rollups == nil {
		rollups = []cachepurge.Daily{}
	}
	return reply(http.StatusOK, map[string]any{
		"ok": true, "queues": queues, "date": today, "tenants": rollups, "totals": total,
		"dlq": map[string]any{"waiting": deadLetters, "recorded7d": len(recent), "recorded7dCapped": len(recent) == cachepurge.MaxDeadLetters},
	})
}

// probe runs checks in parallel: "ok" or "failed" each.
func (a *API) probe(ctx context.Context, checks []Check) map[string]string {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.HealthTimeout)
	defer cancel()
	results := make(map[string]string, len(checks))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range checks {
		wg.Go(func() {
			res := "ok"
			if err := c.Probe(ctx); err != nil {
				a.d.Log.WarnContext(ctx, "admin: health check failed", "check", c.Name, "error", err)
				res = "failed"
			}
			mu.Lock()
			results[c.Name] = res
			mu.Unlock()
		})
	}
	wg.Wait()
	return results
}

// purgeProblem is the purge service's error answer.
func purgeProblem(status int, code, msg string) events.APIGatewayV2HTTPResponse {
	return reply(status, map[string]any{"ok": false, "error": map[string]string{"code": code, "message": msg}})
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}
