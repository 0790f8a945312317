package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/siteswarm/eventplatform/internal/observe/metric"
)

// SweepReport is what one sweep did.
type SweepReport struct {
	// Due counts the due jobs found, Woken the wakes sent, Ran the steps
	// run in-process (no queue), Failed the jobs that could not be read or
	// woken.
	Due, Woken, Ran, Failed int
	// OldestDue is how long the oldest due job has been waiting.
	OldestDue time.Duration
	// Drained is false when the budget ran out first.
	Drained bool
}

// HandleSweep is the jobs-sweep Lambda's handler (an EventBridge
// schedule): the job engine's sweep, which finds due jobs. The outbox's
// sweeper, which resends stranded dispatch rows, is another function
// (sweeper, internal/outboxsweep).
func (e *Engine) HandleSweep(ctx context.Context, _ events.EventBridgeEvent) (SweepReport, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Minute)
	}
	return e.Sweep(ctx, deadline.Add(-5*time.Second))
}

// Sweep rediscovers every due job (queued or waiting past its due time,
// or running past its lease) and wakes it; without a queue it runs their
// steps itself, again and again until nothing is due or the budget ends.
// Overlapping sweeps, and a sweep racing a wake, are safe: only one claim
// of a step can succeed.
func (e *Engine) Sweep(ctx context.Context, budget time.Time) (SweepReport, error) {
	var rep SweepReport
	seen := map[string]bool{}
	for pass := 0; ; pass++ {
		now := e.d.Now().UTC()
		ids, oldest, err := e.due(ctx, now)
		if err != nil {
			return rep, err
		}
		if pass == 0 {
			rep.OldestDue = oldest
		}
		var todo []string
		for _, id := range ids {
			if e.d.Waker != nil && seen[id] {
				continue
			}
			seen[id] = true
			todo = append(todo, id)
		}
		rep.Due += len(todo)
		if len(todo) == 0 {
			rep.Drained = true
			break
		}
		ran := e.wakeAll(ctx, todo, budget, &rep)
		if e.d.Waker != nil || ran == 0 || time.Now().After(budget) {
			rep.Drained = !time.Now().After(budget)
			break
		}
	}
	e.d.Metrics.Emit(map[string]string{"Function": "jobs-sweep"},
		metric.Metric{Name: MetricWoken, Unit: metric.Count, Value: float64(rep.Woken + rep.Ran)},
		metric.Metric{Name: MetricOldestDue, Unit: metric.Seconds, Value: rep.OldestDue.Seconds()})
	if rep.Due > 0 {
		e.d.Log.InfoContext(ctx, "jobs: sweep", "due", rep.Due, "woken", rep.Woken, "ran", rep.Ran, "failed", rep.Failed, "oldestDue", rep.OldestDue.String())
	}
	return rep, nil
}

// due lists the due job ids of every partition.
func (e *Engine) due(ctx context.Context, now time.Time) ([]string, time.Duration, error) {
	var ids []string
	var oldest time.Duration
	for shard := range e.d.Store.Shards() {
		cursor := ""
		for {
			page, err := e.d.Store.Due(ctx, DueParams{Shard: shard, Now: now, Limit: e.cfg.SweepPageSize, Cursor: cursor})
			if err != nil {
				return nil, 0, err
			}
			ids = append(ids, page.JobIDs...)
			if page.Cursor == "" {
				break
			}
			cursor = page.Cursor
		}
	}
	if len(ids) > 0 {
		// The oldest due age is read from the first job of each page
		// (pages are oldest first); one read is enough for the metric.
		if j, ok, err := e.d.Store.Get(ctx, ids[0]); err == nil && ok && !j.DueAt.IsZero() {
			oldest = now.Sub(j.DueAt)
		}
	}
	return ids, oldest, nil
}

// wakeAll wakes (or, without a queue, runs) the jobs with bounded
// concurrency and returns how many steps ran in-process.
func (e *Engine) wakeAll(ctx context.Context, ids []string, budget time.Time, rep *SweepReport) int {
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, e.cfg.SweepConcurrency)
	ran := 0
	for _, id := range ids {
		if time.Now().After(budget) {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			j, ok, err := e.d.Store.Get(ctx, id)
			if err != nil || !ok {
				mu.Lock()
				rep.Failed++
				mu.Unlock()
				return
			}
			w := wakeOf(j, time.Time{})
			if e.d.Waker != nil {
				err = e.d.Waker.Wake(ctx, w, 0)
			} else {
				err = e.RunWake(ctx, w)
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				rep.Failed++
				e.d.Log.WarnContext(ctx, "jobs: sweep could not wake a job", "jobId", id, "error", err)
			case e.d.Waker != nil:
				rep.Woken++
			default:
				rep.Ran++
				ran++
			}
		})
	}
	wg.Wait()
	return ran
}

// ScheduledCall is what a schedule sends the sweep function: a sweep, or
// the start of a daily job (kind, tenant; the UTC date is its idempotency
// key and its args' "date"). A daily call without a tenant starts one job
// for each tenant the kind's DailyTenants lists.
type ScheduledCall struct {
	Action   string `json:"action"` // "sweep" or "daily"
	Kind     string `json:"kind,omitempty"`
	TenantID string `json:"tenantId,omitempty"`
}

// DailyStarted is what a daily call answers: the jobs it started (or found
// started already today) and the tenants it could not start one for.
type DailyStarted struct {
	Jobs   []DailyJob        `json:"jobs"`
	Failed map[string]string `json:"failed,omitempty"`
}

// DailyJob is one tenant's job of the day.
type DailyJob struct {
	JobID    string `json:"jobId"`
	TenantID string `json:"tenantId"`
	Status   Status `json:"status"`
	Created  bool   `json:"created"`
}

// HandleSchedule is the sweep function's handler: EventBridge schedules
// send it a ScheduledCall (an empty or unknown body sweeps).
func (e *Engine) HandleSchedule(ctx context.Context, raw json.RawMessage) (any, error) {
	var c ScheduledCall
	_ = json.Unmarshal(raw, &c)
	if c.Action == "daily" {
		if c.TenantID == "" {
			return e.StartDaily(ctx, c.Kind)
		}
		j, created, err := e.startDaily(ctx, c.Kind, c.TenantID)
		if err != nil {
			return nil, err
		}
		return map[string]any{"jobId": j.ID, "status": j.Status, "created": created}, nil
	}
	return e.HandleSweep(ctx, events.EventBridgeEvent{})
}

// StartDaily starts today's job of kind for every tenant its DailyTenants
// lists. A tenant whose start fails does not stop the others; the call
// fails (and EventBridge retries it: each start is idempotent per date)
// when any did.
func (e *Engine) StartDaily(ctx context.Context, kind string) (DailyStarted, error) {
	k, ok := e.kinds[kind]
	if !ok || k.DailyTenants == nil {
		return DailyStarted{}, badRequest(CodeInvalidRequest, "kind %q has no daily schedule per tenant", kind)
	}
	tenants, err := k.DailyTenants(ctx)
	if err != nil {
		return DailyStarted{}, fmt.Errorf("jobs: tenants of the daily %s: %w", kind, err)
	}
	out := DailyStarted{Jobs: []DailyJob{}}
	var errs []error
	for _, t := range tenants {
		j, created, err := e.startDaily(ctx, kind, t)
		if err != nil {
			if out.Failed == nil {
				out.Failed = map[string]string{}
			}
			out.Failed[t] = err.Error()
			errs = append(errs, fmt.Errorf("%s: %w", t, err))
			continue
		}
		out.Jobs = append(out.Jobs, DailyJob{JobID: j.ID, TenantID: t, Status: j.Status, Created: created})
	}
	if len(errs) > 0 {
		e.d.Log.ErrorContext(ctx, "jobs: daily starts failed", "kind", kind, "failed", len(errs), "started", len(out.Jobs))
		return out, errors.Join(errs...)
	}
	return out, nil
}

func (e *Engine) startDaily(ctx context.Context, kind, tenant string) (Job, bool, error) {
	date := e.d.Now().UTC().Format(time.DateOnly)
	args, _ := json.Marshal(map[string]string{"date": date})
	return e.Start(ctx, StartParams{Kind: kind, TenantID: tenant, IdempotencyKey: date, Args: args})
}
