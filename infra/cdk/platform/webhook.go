package platform

import (
	"encoding/json"

	"github.com/aws/jsii-runtime-go"

	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

// PathWebhookStripe is the route Stripe posts to (its descriptor's).
const PathWebhookStripe = webhookfn.Path

// newWebhookStripe creates the Stripe adapter behind POST /webhook/stripe.
// Its role may invoke the ingest function (and the ingest function's
// resource policy names this role) and read the Stripe signing secrets;
// nothing else.
func (p *Platform) newWebhookStripe(ingest *Function) {
	// A random placeholder: the webhook refuses anything but a JSON list
	// of whsec_ secrets, so it fails loudly until an operator sets the
	// real value (Stripe retries meanwhile).
	secrets := p.newFunctionSecrets(webhookfn.Function)
	p.Secrets.StripeWebhook = secrets[0]

	// Only the default tenant travels in the environment; the Connect
	// accounts are kept in SSM (config.go).
	tenants, err := json.Marshal(webhook.TenantMap{Default: p.Stage.StripeDefaultTenant})
	if err != nil {
		panic(err)
	}
	f := p.newFunction(p.spec(webhookfn.Function, secretEnv(webhookfn.Function, secrets, map[string]*string{
		webhookfn.EnvIngestFunction: ingest.Fn.FunctionArn(),
		webhookfn.EnvTenantMap:      jsii.String(string(tenants)),
		wire.EnvStage:               jsii.String(p.Stage.Prefix()),
	})))
	p.allowSecrets(f, secrets)
	p.readConfig(f, p.mapParameters(ConfigStripeAccountTenants, p.Stage.StripeAccountTenants), webhookfn.EnvAccountTenantsPath, webhookfn.EnvAccountTenantsVersion)
	p.grantInvokeIngest(ingest, f, "WebhookStripe")
	p.routes(f)
}

// grantInvokeIngest lets a producer function invoke ingest: an identity
// statement on its role and a matching entry in ingest's resource policy.
func (p *Platform) grantInvokeIngest(ingest, producer *Function, id string) {
	allow(producer.Role, []string{"lambda:InvokeFunction"}, ingest.Fn.FunctionArn())
	p.allowInvokeIngest(ingest, id, producer.Role)
}
