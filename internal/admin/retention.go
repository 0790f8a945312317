package admin

import (
	"context"
	"errors"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/retention"
)

// Retention reads and sets tenants' retention policies (implemented by
// *retention.Service; the replay function serves the same to `evp
// tenants retention`).
type Retention = operator.Retention

// RetentionBody is what PUT /admin/tenants/{t}/retention takes: the
// periods in days (0 or absent: the platform default) and, optionally,
// the version the change is based on (a concurrent change is then a 409,
// not overwritten).
type RetentionBody struct {
	EventsDays    int  `json:"eventsDays"`
	IncidentsDays int  `json:"incidentsDays"`
	ArchivesDays  int  `json:"archivesDays"`
	ExportsDays   int  `json:"exportsDays"`
	IfVersion     *int `json:"ifVersion"`
}

// retentionRoute serves /admin/tenants/{t}/retention: GET the policy as
// it applies, PUT a new one (a shortened period starts its purge at once:
// the answer names it).
func (a *API) retentionRoute(ctx context.Context, method, tenant string, body []byte, actor string) events.APIGatewayV2HTTPResponse {
	if a.d.Retention == nil {
		return problem(http.StatusNotFound, "not_found", "retention policies live in the jobs table, which is not configured")
	}
	switch method {
	case http.MethodGet, http.MethodHead:
		v, err := a.d.Retention.Get(ctx, tenant)
		if err != nil {
			return a.retentionError(ctx, err)
		}
		return reply(http.StatusOK, v)
	case http.MethodPut:
		var in RetentionBody
		if err := decodeBody(body, &in); err != nil {
			return problem(http.StatusBadRequest, "invalid_body", `want {"eventsDays":n,"incidentsDays":n,"archivesDays":n,"exportsDays":n,"ifVersion":n?} (days; 0 or absent: the platform default): `+err.Error())
		}
		v, err := a.d.Retention.Set(ctx, retention.SetParams{TenantID: tenant, EventsDays: in.EventsDays, IncidentsDays: in.IncidentsDays,
			ArchivesDays: in.ArchivesDays, ExportsDays: in.ExportsDays, IfVersion: in.IfVersion, Actor: actor})
		if err != nil {
			return a.retentionError(ctx, err)
		}
		return reply(http.StatusOK, v)
	}
	r := problem(http.StatusMethodNotAllowed, "method_not_allowed", method+" is not allowed here; use GET or PUT")
	r.Headers = map[string]string{"Allow": "GET, PUT"}
	return r
}

func (a *API) retentionError(ctx context.Context, err error) events.APIGatewayV2HTTPResponse {
	var re *jobs.RequestError
	if errors.As(err, &re) {
		status := http.StatusBadRequest
		if re.Code == retention.CodeVersionConflict {
			status = http.StatusConflict
		}
		return problem(status, re.Code, re.Message)
	}
	a.d.Log.ErrorContext(ctx, "admin: retention policy", "error", err)
	return internalError()
}
