package webhookfn

import (
	"context"
	"net/http"
	"strings"

	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	"github.com/siteswarm/eventplatform/internal/wire"
)

// Path is the route Stripe posts to (as API Gateway and the local stack
// serve it).
const Path = "/webhook/stripe"

// Function is webhook-stripe's descriptor (For(stripe.Declaration)).
var Function = For(stripe.Declaration)

// For is a webhook provider's function, a view of its declaration:
// webhook-<name>, public behind POST its Path (the URL published for the
// provider's settings), reading its signing secrets (a secret of its own,
// created by the CDK app) and its tenant map, invoking ingest. The CDK
// app, the local stack, the boot check and functions/deps_test.go read it
// from the catalog like any other function.
func For(d webhook.Declaration) wire.Function {
	v, id := VarsOf(d), constructName(d.Name)
	shape := "JSON list"
	if d.Sources {
		shape = "JSON object of lists by source"
	}
	return wire.Function{
		Name:        FunctionName(d),
		Binary:      FunctionName(d),
		ID:          "Webhook" + id,
		Provider:    d.Name,
		Description: d.Title + " webhook adapter: verify signature, canonicalize, invoke ingest",
		MemoryMB:    256,
		Timeout:     FunctionTimeout,
		Services:    []string{"lambda", "secretsmanager", "ssm"},
		Routes: []wire.Route{{Method: http.MethodPost, Path: d.Path(), Authz: d.Authz,
			Output: &wire.Output{ID: "Webhook" + id + "Url", Param: "webhook-" + d.Name + "-url", Description: d.Title + " webhook endpoint URL (" + d.Endpoint + ")"}}},
		Secrets: []wire.Secret{{
			ID: id + "WebhookSecrets", EnvARN: v.SecretARN, Env: v.Secret,
			Description:   d.Secret.Description,
			WhyNoRotation: d.Secret.WhyNoRotation,
			Output:        &wire.Output{ID: id + "WebhookSecret", Param: d.Name + "-webhook-secret", Description: "Secret to put the " + d.Title + " signing secrets in (" + shape + ")"},
		}},
		Wiring: wire.Wire(wire.IgnoreTopology(func(r *envconf.Reader) (Config, error) { return LoadProvider(d, r) }), NewClients,
			func(ctx context.Context, c Config, cl Clients, rt wire.Runtime) (any, error) {
				h, err := New(ctx, c, cl, rt)
				if err != nil {
					return nil, err
				}
				return h.Handle, nil
			}),
	}
}

// FunctionName is a provider's function, webhook-<name>.
func FunctionName(d webhook.Declaration) string { return "webhook-" + d.Name }

// constructName is a provider's name as construct ids spell it
// ("stripe" → "Stripe"): StripeWebhookSecrets, WebhookStripeUrl.
func constructName(name string) string {
	if name == "" {
		return ""
	}
	return strings.ToUpper(name[:1]) + name[1:]
}

// AccountTenants is the name of the stage map a provider's accounts are
// kept under in SSM (ssmparam: stripe-account-tenants).
func AccountTenants(d webhook.Declaration) string { return d.Name + "-account-tenants" }
