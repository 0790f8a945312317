package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/kit/canonjson"
	"github.com/siteswarm/eventplatform/internal/ledger"
)

// Prefix is the path every admin route starts with.
const Prefix = "/admin"

// DefaultActor is recorded as who replayed or moved an incident when the
// request does not say.
const DefaultActor = "admin-api"

// API is the admin API handler.
type API struct {
	cfg Config
	d   Deps
	// gate limits wrong bearer keys per source (nil without SignIns).
	gate *Gate
}

// Handle is the Lambda handler (API Gateway HTTP API, payload format 2.0).
func (a *API) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	start := time.Now()
	method := strings.ToUpper(req.RequestContext.HTTP.Method)
	path := req.RawPath
	if path == "" {
		path = req.RequestContext.HTTP.Path
	}
	var resp events.APIGatewayV2HTTPResponse
	if isConsole(path) {
		resp = a.console(ctx, req) // its own headers, session and CSP
		if resp.Headers == nil {
			resp.Headers = map[string]string{}
		}
		if id := req.RequestContext.RequestID; id != "" {
			resp.Headers["X-Request-Id"] = id
		}
	} else {
		resp = a.serve(ctx, method, path, req)
		resp.Headers = withDefaultHeaders(resp.Headers, req.RequestContext.RequestID)
	}
	a.d.Log.InfoContext(ctx, "admin: "+method+" "+path, "status", resp.StatusCode, "durationMs", time.Since(start).Milliseconds())
	return resp, nil
}

func (a *API) serve(ctx context.Context, method, rawPath string, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	var locked *ErrLocked
	if err := a.bearer(ctx, header(req.Headers, "authorization"), req.RequestContext.HTTP.SourceIP); errors.As(err, &locked) {
		a.d.Log.WarnContext(ctx, "admin: bearer key refused: too many failed keys from this address", "sourceIp", req.RequestContext.HTTP.SourceIP, "retryAfterSeconds", locked.RetryAfter())
		r := problem(http.StatusTooManyRequests, "too_many_failed_keys", locked.Error())
		r.Headers = map[string]string{"Retry-After": strconv.Itoa(locked.RetryAfter())}
		return r
	} else if err != nil {
		if strings.HasPrefix(rawPath, Prefix+"/purge/") || rawPath == Prefix+"/purge" {
			// The cache purge service's own shape (spec 001 §9.1).
			r := reply(http.StatusUnauthorized, map[string]any{"ok": false, "error": "unauthorized"})
			r.Headers = map[string]string{"WWW-Authenticate": `Bearer realm="admin"`}
			return r
		}
		r := problem(http.StatusUnauthorized, "unauthorized", "send Authorization: Bearer <ADMIN_API_KEY>")
		r.Headers = map[string]string{"WWW-Authenticate": `Bearer realm="admin"`}
		return r
	}
	segs, err := split(rawPath)
	if err != nil {
		return problem(http.StatusBadRequest, "invalid_path", err.Error())
	}
	q := query(req)
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		return problem(http.StatusUnsupportedMediaType, "unsupported_media_type", "send a JSON body")
	}

	route := func(want string, h func() events.APIGatewayV2HTTPResponse) events.APIGatewayV2HTTPResponse {
		return onlyMethod(method, want, h)
	}
	switch {
	case len(segs) >= 1 && segs[0] == "jobs":
		return a.jobRoutes(ctx, method, segs[1:], q, body)
	case len(segs) >= 1 && segs[0] == "topics":
		return a.topicRoutes(ctx, method, segs[1:], body)
	case len(segs) >= 1 && segs[0] == "purge":
		return a.purgeRoutes(ctx, method, segs[1:], q)
	case len(segs) == 3 && segs[0] == "tenants" && segs[2] == "retention":
		return a.retentionRoute(ctx, method, segs[1], body, DefaultActor)
	case len(segs) == 1 && segs[0] == "health":
		return route(http.MethodGet, func() events.APIGatewayV2HTTPResponse { return a.health(ctx) })
	case len(segs) == 1 && segs[0] == "queues":
		return route(http.MethodGet, func() events.APIGatewayV2HTTPResponse { return a.queues(ctx) })
	case len(segs) == 1 && segs[0] == "events":
		return route(http.MethodGet, func() events.APIGatewayV2HTTPResponse { return a.listEvents(ctx, q) })
	case len(segs) == 2 && segs[0] == "events":
		return route(http.MethodGet, func() events.APIGatewayV2HTTPResponse { return a.event(ctx, segs[1], q) })
	case len(segs) == 3 && segs[0] == "events" && segs[2] == "attempts":
		return route(http.MethodGet, func() events.APIGatewayV2HTTPResponse { return a.attempts(ctx, segs[1], q) })
	case len(segs) == 1 && segs[0] == "incidents":
		return route(http.MethodGet, func() events.APIGatewayV2HTTPResponse { return a.listIncidents(ctx, q) })
	case len(segs) == 2 && segs[0] == "incidents":
		return route(http.MethodGet, func() events.APIGatewayV2HTTPResponse { return a.getIncident(ctx, segs[1]) })
	case len(segs) == 3 && segs[0] == "incidents" && segs[2] == "replay":
		return route(http.MethodPost, func() events.APIGatewayV2HTTPResponse { return a.replay(ctx, segs[1], body) })
	case len(segs) == 3 && segs[0] == "incidents" && segs[2] == "transition":
		return route(http.MethodPost, func() events.APIGatewayV2HTTPResponse { return a.transition(ctx, segs[1], body) })
	}
	return problem(http.StatusNotFound, "not_found", "no admin route "+method+" "+rawPath+"; see docs/local-development.md")
}

// onlyMethod runs h for the method a route wants (GET also answers HEAD),
// else answers 405 with Allow.
func onlyMethod(method, want string, h func() events.APIGatewayV2HTTPResponse) events.APIGatewayV2HTTPResponse {
	if method != want && !(want == http.MethodGet && method == http.MethodHead) {
		r := problem(http.StatusMethodNotAllowed, "method_not_allowed", method+" is not allowed here; use "+want)
		r.Headers = map[string]string{"Allow": want}
		return r
	}
	return h()
}

// split returns the unescaped path segments after /admin.
func split(rawPath string) ([]string, error) {
	rest, ok := strings.CutPrefix(rawPath, Prefix)
	if !ok || (rest != "" && rest[0] != '/') {
		return nil, errors.New("not an admin path")
	}
	var segs []string
	for _, s := range strings.Split(strings.Trim(rest, "/"), "/") {
		if s == "" {
			continue
		}
		u, err := url.PathUnescape(s)
		if err != nil {
			return nil, err
		}
		segs = append(segs, u)
	}
	return segs, nil
}

func query(req events.APIGatewayV2HTTPRequest) url.Values {
	if req.RawQueryString != "" {
		if v, err := url.ParseQuery(req.RawQueryString); err == nil {
			return v
		}
	}
	v := url.Values{}
	for k, s := range req.QueryStringParameters {
		v.Set(k, s)
	}
	return v
}

// header reads a request header; payload format 2.0 lower-cases names, but
// a test or another integration may not.
func header(h map[string]string, name string) string {
	if v, ok := h[name]; ok {
		return v
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// IsNotFound reports whether err is a missing event or incident.
func IsNotFound(err error) bool {
	return errors.Is(err, ledger.ErrNotFound) || errors.Is(err, incident.ErrNotFound)
}

// maxBody bounds an action's JSON body (a note is at most 1 KiB).
const maxBody = 16 << 10

// decodeBody decodes an optional JSON body strictly: one object, no
// duplicate or unknown members, valid UTF-8, at most maxBody bytes.
func decodeBody(body []byte, dst any) error {
	if len(strings.TrimSpace(string(body))) == 0 {
		return nil
	}
	if len(body) > maxBody {
		return fmt.Errorf("body is %d bytes; the limit is %d", len(body), maxBody)
	}
	if err := canonjson.Check(body, 8); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("one JSON object, please")
	}
	return nil
}
