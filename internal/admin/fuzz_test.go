package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/siteswarm/eventplatform/internal/admin"
	"github.com/siteswarm/eventplatform/internal/admin/console"
	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/replay"
	"github.com/siteswarm/eventplatform/internal/secret"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// FuzzRequest: whatever the path, query and body, the admin API answers a
// JSON response with a machine-readable error code for every refusal, and
// a malformed request never reaches an operation as a 500; the console
// (HTML) never fails and never sends a browser off its own pages. The operations
// behind it are stand-ins that answer "not found": this target is about the
// request parsing (paths, escapes, filters, cursors, bodies).
func FuzzRequest(f *testing.F) {
	f.Add("GET", "/admin/incidents", "status=open&tenant=acme&since=24h&limit=5", "")
	f.Add("GET", "/admin/events/evt_1", "tenant=acme&payload=false", "")
	f.Add("GET", "/admin/incidents/inc_0123456789abcdef0123456789abcdef", "", "")
	f.Add("POST", "/admin/incidents/inc_0123456789abcdef0123456789abcdef/replay", "", `{"force":true,"note":"x"}`)
	f.Add("POST", "/admin/incidents/inc_0123456789abcdef0123456789abcdef/transition", "", `{"status":"triaged","by":"ada"}`)
	f.Add("GET", "/admin/events/..%2F..%2Fetc", "tenant=ACME", "")
	f.Add("GET", "/admin/incidents", "since=yesterday&until=0&limit=-1&cursor=%%%", "")
	f.Add("GET", "/admin/%ZZ", "", "")
	f.Add("GET", "/admin/queues", "", "")
	f.Add("HEAD", "/admin/health", "", "")
	// The console: pages, malformed escapes, and the sign-in's next.
	f.Add("GET", "/console", "", "")
	f.Add("GET", "/console/%zz", "", "")
	f.Add("GET", "/console/incidents/%G0", "status=%zz", "")
	f.Add("POST", "/console/login", "", "key=k-0123456789ab&next=%2Fconsole%2F..%5Cevil.com")
	f.Add("POST", "/console/login", "", "key=k-0123456789ab&next=%2Fconsole%2F%252e%252e%2F%255Cevil.com")
	f.Add("POST", "/console/login", "", "key=k-0123456789ab&next=%2Fconsole%0D%0ALocation%3A%20%2F%2Fe.com")
	f.Add("POST", "/console/login", "", "key=k-0123456789ab&next=https%3A%2F%2Fevil.com%2Fconsole")
	f.Add("GET", "/console/login", "next=%2Fconsole%2F..%2F%5Cevil.com", "")
	f.Add("POST", "/console/login", "", "key=k-0123456789ab&next=%2Fconsole%2F..%2F%5Cevil.com")
	f.Add("POST", "/console/login", "", "key=k-0123456789ab&next=%2F%2Fevil.com")
	f.Add("POST", "/console/incidents/inc_0123456789abcdef0123456789abcdef/replay", "", "csrf=00")
	a := standIn(f, secret.List{"k-0123456789ab"})
	f.Fuzz(func(t *testing.T, method, path, query, body string) {
		resp, err := a.Handle(context.Background(), events.APIGatewayV2HTTPRequest{
			RawPath: path, RawQueryString: query, Body: body,
			Headers:        map[string]string{"authorization": "Bearer k-0123456789ab", "content-type": "application/x-www-form-urlencoded"},
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method}},
		})
		if err != nil {
			t.Fatalf("a function error: %v", err)
		}
		if resp.StatusCode >= http.StatusInternalServerError {
			t.Fatalf("%s %s?%s: %d %s", method, path, query, resp.StatusCode, resp.Body)
		}
		if strings.HasPrefix(path, "/console") {
			// HTML for a browser; wherever it sends the browser must be a
			// console page of this origin.
			if loc := resp.Headers["Location"]; loc != "" {
				if !strings.HasPrefix(loc, "/console") || strings.HasPrefix(loc, "//") || strings.ContainsAny(loc, "\\\r\n") {
					t.Fatalf("%s %s?%s %q: redirects to %q", method, path, query, body, loc)
				}
			}
			return
		}
		var v map[string]any
		if json.Unmarshal([]byte(resp.Body), &v) != nil {
			t.Fatalf("not JSON: %q", resp.Body)
		}
		if resp.StatusCode >= 400 {
			e, _ := v["error"].(map[string]any)
			if code, _ := e["code"].(string); code == "" {
				if _, ok := v["result"]; !ok { // replay outcomes carry their reason instead
					t.Fatalf("a refusal without a code: %s", resp.Body)
				}
			}
		}
	})
}

// standIn is the admin API over stand-ins that know no event or incident:
// for tests of request parsing, routing and authentication.
func standIn(tb testing.TB, keys admin.Keys) *admin.API {
	tb.Helper()
	// The console's sessions and sign-in limits are the real table (on
	// the embedded emulator).
	env := awslocaltest.NewEnv(tb)
	store := &dynamo.Admin{Client: env.DynamoDB, Table: env.Resources.AdminTable}
	pages, err := console.New(console.Config{}, console.Deps{
		Keys: keys, Sessions: store, SignIns: store, Views: notFound{}, Replayer: notFound{}, Incidents: notFound{}, Queues: notFound{}, Topology: topology.Default(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	a, err := admin.New(admin.Config{}, admin.Deps{
		Keys: keys, Views: notFound{}, Replayer: notFound{}, Incidents: notFound{}, Queues: notFound{}, Topology: topology.Default(),
		Console: pages,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// notFound is an operations stand-in that knows no event or incident.
type notFound struct{}

func (notFound) ViewEvent(context.Context, operator.EventQuery) (operator.EventView, error) {
	return operator.EventView{}, ledger.ErrNotFound
}
func (notFound) ViewIncident(context.Context, string) (operator.IncidentView, error) {
	return operator.IncidentView{}, incident.ErrNotFound
}
func (notFound) Transition(context.Context, string, incident.Status, string, string) (incident.Incident, error) {
	return incident.Incident{}, incident.ErrNotFound
}
func (notFound) ReplayOne(_ context.Context, _ replay.Request, id string) replay.Outcome {
	return replay.Outcome{IncidentID: id, Result: replay.ResultSkipped, Reason: replay.SkipNotFound}
}
func (notFound) ListEvents(context.Context, operator.TenantQuery) (operator.EventPage, error) {
	return operator.EventPage{}, nil
}
func (notFound) Attempts(context.Context, operator.AttemptQuery) (operator.AttemptsView, error) {
	return operator.AttemptsView{}, ledger.ErrNotFound
}
func (notFound) Replay(_ context.Context, r replay.Request) (replay.Summary, error) {
	return replay.Summary{DryRun: r.DryRun}, nil
}
func (notFound) List(context.Context, incident.Filter) (incident.Page, error) {
	return incident.Page{}, nil
}

func (notFound) Depths(context.Context) ([]admin.QueueDepth, error) { return nil, nil }
