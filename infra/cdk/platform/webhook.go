package platform

import (
	"encoding/json"

	"github.com/aws/jsii-runtime-go"

	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/providers"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/catalog"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

// PathWebhookStripe is the route Stripe posts to (its descriptor's).
const PathWebhookStripe = webhookfn.Path

// newWebhooks creates every webhook provider's function from its
// descriptor (catalog.Webhooks: webhookfn.For of each provider): its
// route, its signing secret and its outputs are the descriptor's. Its role
// may invoke the ingest function (and the ingest function's resource
// policy names the role), read its own signing secret and its own
// account map; nothing else.
func (p *Platform) newWebhooks(ingest *Function) {
	for _, fn := range catalog.Webhooks() {
		p.newWebhook(fn, providers.MustOf(fn.Provider), ingest)
	}
}

func (p *Platform) newWebhook(fn wire.Function, d webhook.Declaration, ingest *Function) {
	// A random placeholder: the webhook refuses anything but the
	// provider's secrets, so it fails loudly until an operator sets the
	// real value (the provider retries meanwhile).
	secrets := p.newFunctionSecrets(fn)
	if d.Name == stripe.Source {
		p.Secrets.StripeWebhook = secrets[0]
	}

	// Only the default tenant travels in the environment; the accounts are
	// kept in SSM (config.go).
	t, v := p.Stage.Tenants(d.Name), webhookfn.VarsOf(d)
	tenants, err := json.Marshal(webhook.TenantMap{Default: t.Default})
	if err != nil {
		panic(err)
	}
	f := p.newFunction(p.spec(fn, secretEnv(fn, secrets, map[string]*string{
		webhookfn.EnvIngestFunction: ingest.Fn.FunctionArn(),
		v.TenantMap:                 jsii.String(string(tenants)),
		wire.EnvStage:               jsii.String(p.Stage.Prefix()),
	})))
	p.allowSecrets(f, secrets)
	p.readConfig(f, p.mapParameters(webhookfn.AccountTenants(d), t.Accounts), v.AccountTenantsPath, v.AccountTenantsVersion)
	p.grantInvokeIngest(ingest, f, fn.ID)
	p.routes(f)
}

// grantInvokeIngest lets a producer function invoke ingest: an identity
// statement on its role and a matching entry in ingest's resource policy.
func (p *Platform) grantInvokeIngest(ingest, producer *Function, id string) {
	allow(producer.Role, []string{"lambda:InvokeFunction"}, ingest.Fn.FunctionArn())
	p.allowInvokeIngest(ingest, id, producer.Role)
}
