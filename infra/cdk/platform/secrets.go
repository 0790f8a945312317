package platform

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/jsii-runtime-go"

	"github.com/siteswarm/eventplatform/internal/wire"
)

// Secrets are the stage's Secrets Manager secrets. Their values are set by
// an operator after the first deploy (docs/deploy.md); the functions cache
// them and re-read them periodically, so a rotation needs no redeploy.
type Secrets struct {
	// StripeWebhook holds the active Stripe endpoint signing secrets.
	StripeWebhook awssecretsmanager.Secret
	// Subscribers holds each HTTP topic's subscriber signing secret.
	Subscribers map[string]awssecretsmanager.Secret
	// AdminAPIKey is the bearer key of the admin API.
	AdminAPIKey awssecretsmanager.Secret
	// CloudflareToken is the cache purge service's API token (set when
	// the purge consumer is deployed).
	CloudflareToken awssecretsmanager.Secret
	// StripeAPIKey is the Stripe reconciliation's restricted API key.
	StripeAPIKey awssecretsmanager.Secret
	// byID are the secrets the function descriptors declare, by
	// construct id.
	byID map[string]awssecretsmanager.Secret
}

// Secrets get generated names on purpose: Secrets Manager keeps a deleted
// secret's name for its recovery window (30 days), so a fixed name would
// block recreating a stage soon after `cdk destroy`. The functions get ARNs,
// and operators find them through the /evp/<stage>/… parameters.
func (p *Platform) secretDescription(what string) *string {
	return jsii.String(p.Stage.Prefix() + ": " + what)
}

func (p *Platform) newSecrets() {
	p.Secrets.Subscribers = map[string]awssecretsmanager.Secret{}
	p.Secrets.AdminAPIKey = awssecretsmanager.NewSecret(p.Stack, jsii.String("AdminApiKey"), &awssecretsmanager.SecretProps{
		Description: p.secretDescription(`admin API (/admin/*) bearer keys as a JSON list, e.g. ["k-new…", "k-old…"]. ` +
			"Set it after the first deploy (the generated value is a placeholder the admin API refuses)."),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{ExcludePunctuation: jsii.Bool(true)},
		RemovalPolicy:        awscdk.RemovalPolicy_DESTROY,
	})
	suppress(p.Secrets.AdminAPIKey, "AwsSolutions-SMG4",
		"Operator bearer keys with no backing service for a rotation function to update: operators rotate them with an overlap (two active keys, docs/deploy.md#rotation); the admin API re-reads the list every few minutes.")
}

// newFunctionSecrets creates the secrets a function's descriptor declares
// (wire.Function.Secrets), in its order: generated names (above), a
// random placeholder the function refuses until an operator sets the real
// list, no rotation function (the descriptor says why).
func (p *Platform) newFunctionSecrets(fn wire.Function) []awssecretsmanager.Secret {
	var out []awssecretsmanager.Secret
	for _, s := range fn.Secrets {
		secret := awssecretsmanager.NewSecret(p.Stack, jsii.String(s.ID), &awssecretsmanager.SecretProps{
			Description:          p.secretDescription(s.Description),
			GenerateSecretString: &awssecretsmanager.SecretStringGenerator{ExcludePunctuation: jsii.Bool(true)},
			RemovalPolicy:        awscdk.RemovalPolicy_DESTROY,
		})
		suppress(secret, "AwsSolutions-SMG4", s.WhyNoRotation)
		if p.Secrets.byID == nil {
			p.Secrets.byID = map[string]awssecretsmanager.Secret{}
		}
		p.Secrets.byID[s.ID] = secret
		out = append(out, secret)
	}
	return out
}

// secretEnv names a function's secrets in its environment (their EnvARN).
func secretEnv(fn wire.Function, secrets []awssecretsmanager.Secret, env map[string]*string) map[string]*string {
	for i, s := range fn.Secrets {
		env[s.EnvARN] = secrets[i].SecretArn()
	}
	return env
}

// allowSecrets lets a function read its secrets, and no other.
func (p *Platform) allowSecrets(f *Function, secrets []awssecretsmanager.Secret) {
	for _, s := range secrets {
		allow(f.Role, []string{"secretsmanager:GetSecretValue"}, s.SecretArn())
	}
}
