package adminfn

import (
	"context"

	"github.com/siteswarm/eventplatform/internal/wire"
)

// Admin API routing: one greedy route for the API and two for the
// operations console; the function routes and authenticates every request
// itself (constant-time bearer check against the admin key secret).
const (
	PathAdmin = "/admin/{proxy+}"
	// PathConsole is the operations console (served by this function).
	PathConsole = "/console"
)

// throttle is the admin and console routes' limit, below the stage's.
var throttle = &wire.Throttle{Rate: 10, Burst: 20}

const consoleAuthz = "The console authenticates every request itself: a session cookie minted by its login form from an active admin key (a random session id, HMAC-signed, recorded server-side in the admin table so sign-out ends it everywhere; 8 hours absolute, 1 hour idle; HttpOnly, Secure, SameSite=Strict), or Authorization: Bearer <key>; every state-changing form carries a CSRF token bound to the session; failed sign-ins back off per source address. Throttled like the admin routes."

// Function is admin-api's descriptor: ANY /admin/{proxy+} and the
// console's /console routes, each throttled.
var Function = wire.Function{
	Name:        Name,
	Binary:      Name,
	ID:          "AdminApi",
	Description: "Operator API (/admin/*): health, queues, events, incidents, triage, replay",
	MemoryMB:    256,
	Timeout:     FunctionTimeout,
	Services:    []string{"dynamodb", "sqs", "s3", "secretsmanager", "lambda", "cloudwatch"},
	Routes: []wire.Route{
		{Method: "ANY", Path: PathAdmin, Throttle: throttle,
			Authz: "The admin function authenticates every request itself: Authorization: Bearer <key>, compared in constant time with the active keys of the admin-api-key secret (re-read every few minutes, so a rotation needs no redeploy). The route is throttled below the stage limit."},
		// The operations console: the same function and key (a login form
		// trades it for an HttpOnly, Secure, SameSite=Strict session
		// cookie; state changes carry a CSRF token).
		{Method: "ANY", Path: PathConsole, ID: "AdminConsole", Throttle: throttle, Authz: consoleAuthz},
		{Method: "ANY", Path: PathConsole + "/{proxy+}", ID: "AdminConsoleProxy", Throttle: throttle, Authz: consoleAuthz},
	},
	Wiring: wire.Wire(Load, NewClients, func(ctx context.Context, c Config, cl Clients, rt wire.Runtime) (any, error) {
		api, err := New(ctx, c, cl, rt)
		if err != nil {
			return nil, err
		}
		return api.Handle, nil
	}),
}
