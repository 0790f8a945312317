package operator

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/replay"
)

// Actions on durable jobs (the CLI's `evp jobs`; the admin API serves the
// same operations over HTTP).
const (
	ActionJobStart   = "jobs.start"
	ActionJobGet     = "jobs.get"
	ActionJobList    = "jobs.list"
	ActionJobCancel  = "jobs.cancel"
	ActionJobRestart = "jobs.restart"
)

// Jobs are the job engine's operations (implemented by *jobs.Engine).
type Jobs interface {
	Start(ctx context.Context, p jobs.StartParams) (jobs.Job, bool, error)
	Get(ctx context.Context, id string) (jobs.Job, error)
	List(ctx context.Context, p jobs.ListParams) (jobs.Page, error)
	Cancel(ctx context.Context, id string) (jobs.Job, error)
	Restart(ctx context.Context, id string, p jobs.RestartParams) (jobs.Job, error)
}

type (
	// JobStartIn starts a job (or returns the one its key started).
	JobStartIn struct {
		action
		Kind           string          `json:"kind"`
		TenantID       string          `json:"tenantId"`
		IdempotencyKey string          `json:"idempotencyKey"`
		Args           json.RawMessage `json:"args"`
	}
	// JobIn names one job; FromScratch and Note are restart's.
	JobIn struct {
		action
		JobID       string `json:"jobId"`
		FromScratch bool   `json:"fromScratch"`
		Note        string `json:"note"`
	}
	// JobListIn filters jobs (a tenant or a kind is required).
	JobListIn struct {
		action
		TenantID string      `json:"tenantId"`
		Kind     string      `json:"kind"`
		Status   jobs.Status `json:"status"`
		Limit    int         `json:"limit"`
		Cursor   string      `json:"cursor"`
	}
	// JobStarted is what a start answers.
	JobStarted struct {
		Job     jobs.Job `json:"job"`
		Created bool     `json:"created"`
	}
)

// refuseJob makes a job engine's refusal the function's (a Refusal the
// caller prints, not a function error).
func refuseJob(err error) error {
	var re *jobs.RequestError
	if errors.As(err, &re) {
		return &replay.RequestError{Code: re.Code, Message: re.Message}
	}
	return err
}

// jobRoutes adds the job actions when an engine is configured.
func (f *Function) jobRoutes(j Jobs) {
	refuse := refuseJob
	f.routes[ActionJobStart] = typed(func(ctx context.Context, in JobStartIn) (JobStarted, error) {
		job, created, err := j.Start(ctx, jobs.StartParams{Kind: in.Kind, TenantID: in.TenantID, IdempotencyKey: in.IdempotencyKey, Args: in.Args})
		return JobStarted{Job: job, Created: created}, refuse(err)
	})
	f.routes[ActionJobGet] = typed(func(ctx context.Context, in JobIn) (jobs.Job, error) {
		job, err := j.Get(ctx, in.JobID)
		return job, refuse(err)
	})
	f.routes[ActionJobList] = typed(func(ctx context.Context, in JobListIn) (jobs.Page, error) {
		page, err := j.List(ctx, jobs.ListParams{TenantID: in.TenantID, Kind: in.Kind, Status: in.Status, Limit: in.Limit, Cursor: in.Cursor})
		return page, refuse(err)
	})
	f.routes[ActionJobCancel] = typed(func(ctx context.Context, in JobIn) (jobs.Job, error) {
		job, err := j.Cancel(ctx, in.JobID)
		return job, refuse(err)
	})
	f.routes[ActionJobRestart] = typed(func(ctx context.Context, in JobIn) (jobs.Job, error) {
		job, err := j.Restart(ctx, in.JobID, jobs.RestartParams{FromScratch: in.FromScratch, Note: in.Note})
		return job, refuse(err)
	})
}
