package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/operator"
)

// Jobs are the durable job engine's operations, the same the replay
// function serves to `evp jobs` (implemented by *jobs.Engine).
type Jobs = operator.Jobs

// JobView is a job as the admin API and the console show it: everything
// but the checkpoint and lease internals.
type JobView struct {
	JobID          string          `json:"jobId"`
	Kind           string          `json:"kind"`
	TenantID       string          `json:"tenantId"`
	IdempotencyKey string          `json:"idempotencyKey"`
	Status         jobs.Status     `json:"status"`
	Generation     int             `json:"generation"`
	Steps          int             `json:"steps"`
	Progress       *jobs.Progress  `json:"progress,omitempty"`
	Attempts       int             `json:"attempts"`
	Args           json.RawMessage `json:"args"`
	Result         json.RawMessage `json:"result,omitempty"`
	Error          *jobs.Error     `json:"error,omitempty"`
	IncidentID     string          `json:"incidentId,omitempty"`
	CreatedAt      string          `json:"createdAt"`
	UpdatedAt      string          `json:"updatedAt"`
	FinishedAt     string          `json:"finishedAt,omitempty"`
	DueAt          string          `json:"dueAt,omitempty"`
}

// ViewOfJob is j as JobView shows it.
func ViewOfJob(j jobs.Job) JobView {
	v := JobView{JobID: j.ID, Kind: j.Kind, TenantID: j.TenantID, IdempotencyKey: j.IdempotencyKey, Status: j.Status,
		Generation: j.Generation, Steps: j.Steps, Progress: j.Progress, Attempts: j.Attempts, Args: j.Args, Result: j.Result, Error: j.Error,
		IncidentID: j.IncidentID, CreatedAt: rfc3339(j.CreatedAt), UpdatedAt: rfc3339(j.UpdatedAt)}
	if !j.FinishedAt.IsZero() {
		v.FinishedAt = rfc3339(j.FinishedAt)
	}
	if !j.DueAt.IsZero() {
		v.DueAt = rfc3339(j.DueAt)
	}
	return v
}

// CodeNotDownloadable is jobkinds.CodeNotDownloadable (a job that is not
// a finished export), which this package cannot import.
const CodeNotDownloadable = "not_downloadable"

// JobPage is a page of jobs as the admin API answers it: next and prev
// are the cursors of the pages after and before it.
type JobPage struct {
	Jobs []JobView `json:"jobs"`
	Next string    `json:"next,omitempty"`
	Prev string    `json:"prev,omitempty"`
}

// JobKinds lists the engine's kinds when it says (it does: *jobs.Engine).
func JobKinds(j Jobs) []string {
	if k, ok := j.(interface{ Kinds() []string }); ok {
		return k.Kinds()
	}
	return nil
}

// jobRoutes serves /admin/jobs[/…].
func (a *API) jobRoutes(ctx context.Context, method string, segs []string, q url.Values, body []byte) events.APIGatewayV2HTTPResponse {
	if a.d.Jobs == nil {
		return problem(http.StatusNotFound, "not_found", "the job engine is not configured")
	}
	only := func(want string, h func() events.APIGatewayV2HTTPResponse) events.APIGatewayV2HTTPResponse {
		return onlyMethod(method, want, h)
	}
	switch {
	case len(segs) == 0 && method == http.MethodPost:
		return a.startJob(ctx, body)
	case len(segs) == 0:
		return only(http.MethodGet, func() events.APIGatewayV2HTTPResponse { return a.listJobs(ctx, q) })
	case len(segs) == 1:
		return only(http.MethodGet, func() events.APIGatewayV2HTTPResponse {
			j, err := a.d.Jobs.Get(ctx, segs[0])
			if err != nil {
				return a.jobError(ctx, err)
			}
			return reply(http.StatusOK, ViewOfJob(j))
		})
	case len(segs) == 2 && (segs[1] == "cancel" || segs[1] == "restart"):
		return only(http.MethodPost, func() events.APIGatewayV2HTTPResponse {
			var in struct {
				FromScratch bool   `json:"fromScratch"`
				Note        string `json:"note"`
			}
			if err := decodeBody(body, &in); err != nil {
				return problem(http.StatusBadRequest, "invalid_body", `want {"fromScratch":bool,"note":"…"} (all optional)`)
			}
			var j jobs.Job
			var err error
			if segs[1] == "cancel" {
				j, err = a.d.Jobs.Cancel(ctx, segs[0])
			} else {
				j, err = a.d.Jobs.Restart(ctx, segs[0], jobs.RestartParams{FromScratch: in.FromScratch, Note: in.Note})
			}
			if err != nil {
				return a.jobError(ctx, err)
			}
			return reply(http.StatusOK, ViewOfJob(j))
		})
	case len(segs) == 2 && segs[1] == "download":
		return only(http.MethodGet, func() events.APIGatewayV2HTTPResponse {
			if a.d.Exports == nil {
				return problem(http.StatusNotFound, "not_found", "export downloads are not configured")
			}
			d, err := a.d.Exports.Download(ctx, segs[0])
			if err != nil {
				return a.jobError(ctx, err)
			}
			return reply(http.StatusOK, d)
		})
	}
	return problem(http.StatusNotFound, "not_found", "no job route "+method+" /admin/jobs/…")
}

func (a *API) startJob(ctx context.Context, body []byte) events.APIGatewayV2HTTPResponse {
	var in struct {
		Kind           string          `json:"kind"`
		TenantID       string          `json:"tenantId"`
		IdempotencyKey string          `json:"idempotencyKey"`
		Args           json.RawMessage `json:"args"`
	}
	if err := decodeBody(body, &in); err != nil || in.Kind == "" {
		return problem(http.StatusBadRequest, "invalid_body", `want {"kind":"…","tenantId":"…","idempotencyKey":"…"?,"args":{…}?}`)
	}
	j, created, err := a.d.Jobs.Start(ctx, jobs.StartParams{Kind: in.Kind, TenantID: in.TenantID, IdempotencyKey: in.IdempotencyKey, Args: in.Args})
	if err != nil {
		return a.jobError(ctx, err)
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return reply(status, map[string]any{"jobId": j.ID, "status": j.Status, "created": created})
}

// JobFilter reads ?tenant=&kind=&status=&cursor= (the JSON API's and the
// console's job listings): neither tenant nor kind lists every tenant's
// jobs of every kind; status "any" is every status.
func JobFilter(q url.Values) jobs.ListParams {
	p := jobs.ListParams{TenantID: firstOf(q, "tenant", "tenantId"), Kind: q.Get("kind"), Status: jobs.Status(q.Get("status")), Cursor: q.Get("cursor")}
	if p.Status == "any" {
		p.Status = ""
	}
	return p
}

func (a *API) listJobs(ctx context.Context, q url.Values) events.APIGatewayV2HTTPResponse {
	p := JobFilter(q)
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return problem(http.StatusBadRequest, "invalid_filter", "limit must be a number")
		}
		p.Limit = n
	}
	page, err := a.d.Jobs.List(ctx, p)
	if err != nil {
		return a.jobError(ctx, err)
	}
	views := make([]JobView, 0, len(page.Jobs))
	for _, j := range page.Jobs {
		views = append(views, ViewOfJob(j))
	}
	return reply(http.StatusOK, JobPage{Jobs: views, Next: page.Cursor, Prev: page.Prev})
}

// jobError maps the engine's refusals to statuses.
func (a *API) jobError(ctx context.Context, err error) events.APIGatewayV2HTTPResponse {
	var re *jobs.RequestError
	if errors.As(err, &re) {
		status := http.StatusBadRequest
		switch re.Code {
		case jobs.CodeNotFound:
			status = http.StatusNotFound
		case jobs.CodeIdempotencyConflict, jobs.CodeTransitionNotAllowed, CodeNotDownloadable:
			status = http.StatusConflict
		}
		return problem(status, re.Code, re.Message)
	}
	a.d.Log.ErrorContext(ctx, "admin: jobs", "error", err)
	return internalError()
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
