package admin

import (
	"context"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// ConsolePrefix is where the operations console is served (by the admin
// API's function, behind the same key).
const ConsolePrefix = "/console"

// Console serves the operations console's pages (package console): the
// admin function routes every /console… request to it.
type Console interface {
	// Serve answers a /console… request with the console's own headers,
	// session and CSP.
	Serve(ctx context.Context, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse
}

// console serves /console… by the console, or 404 without one.
func (a *API) console(ctx context.Context, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	if a.d.Console == nil {
		r := problem(http.StatusNotFound, "not_found", "the console is not configured")
		r.Headers = withDefaultHeaders(nil, "")
		return r
	}
	return a.d.Console.Serve(ctx, req)
}

// isConsole reports whether a path is the console's.
func isConsole(path string) bool {
	return path == ConsolePrefix || strings.HasPrefix(path, ConsolePrefix+"/")
}
