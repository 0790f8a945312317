package platform

import (
	"encoding/json"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
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
	secret := awssecretsmanager.NewSecret(p.Stack, jsii.String("StripeWebhookSecrets"), &awssecretsmanager.SecretProps{
		Description: p.secretDescription(`active Stripe endpoint signing secrets as a JSON list, e.g. ["whsec_…"]. ` +
			"Set it after the first deploy; list two during a rotation."),
		// A random placeholder: the webhook refuses anything but a JSON
		// list of whsec_ secrets, so it fails loudly until an operator sets
		// the real value (Stripe retries meanwhile).
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{ExcludePunctuation: jsii.Bool(true)},
		RemovalPolicy:        awscdk.RemovalPolicy_DESTROY,
	})
	suppress(secret, "AwsSolutions-SMG4",
		"Stripe issues endpoint signing secrets in its dashboard; Secrets Manager cannot rotate them. Operators roll them with an overlap window (docs/deploy.md#rotation) and the webhook re-reads the list every few minutes.")
	p.Secrets.StripeWebhook = secret

	// Only the default tenant travels in the environment; the Connect
	// accounts are kept in SSM (config.go).
	tenants, err := json.Marshal(webhook.TenantMap{Default: p.Stage.StripeDefaultTenant})
	if err != nil {
		panic(err)
	}
	f := p.newFunction(p.spec(webhookfn.Function, map[string]*string{
		webhookfn.EnvIngestFunction: ingest.Fn.FunctionArn(),
		webhookfn.EnvSecretARN:      secret.SecretArn(),
		webhookfn.EnvTenantMap:      jsii.String(string(tenants)),
		wire.EnvStage:               jsii.String(p.Stage.Prefix()),
	}))
	allow(f.Role, []string{"secretsmanager:GetSecretValue"}, secret.SecretArn())
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
