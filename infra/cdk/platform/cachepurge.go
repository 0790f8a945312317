package platform

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/jsii-runtime-go"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/cachepurge"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/purgeapifn"
	"github.com/siteswarm/eventplatform/internal/wire/purgeconsumerfn"
)

// newPurgeAPI creates the cache purge service's private API. Like ingest
// it has no URL and no route: its resource policy admits the stage's purge
// producers and nothing else. It publishes purge requests through ingest.
func (p *Platform) newPurgeAPI(ingest *Function) {
	purgeTable := p.Tables[table.Purge.Name]
	f := p.newFunction(p.spec(purgeapifn.Function, map[string]*string{
		wire.EnvPurgeTable:     purgeTable.TableName(),
		wire.EnvIngestFunction: ingest.Fn.FunctionArn(),
	}))
	// Jobs and coalesce locks: reads, conditional puts (a job and its lock
	// in one transaction: IAM checks PutItem per item), a lock ended by an
	// update when its job cannot be queued; dead letters are listed (Query).
	allow(f.Role, []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"}, purgeTable.TableArn())
	allow(f.Role, []string{"lambda:InvokeFunction"}, ingest.Fn.FunctionArn())
	p.allowInvokeIngest(ingest, "PurgeApi", f.Role)
	for i, principal := range p.Stage.PurgeProducerPrincipals {
		f.Fn.AddPermission(jsii.String(fmt.Sprintf("InvokePurgeProducer%d", i)), &awslambda.Permission{
			Principal: producerPrincipal(principal),
			Action:    jsii.String("lambda:InvokeFunction"),
		})
	}
	p.PurgeAPI = f
}

// newCloudflareToken is the secret consumer-purge reads its API token from.
func (p *Platform) newCloudflareToken() awssecretsmanager.Secret {
	s := awssecretsmanager.NewSecret(p.Stack, jsii.String("CloudflareApiToken"), &awssecretsmanager.SecretProps{
		Description: p.secretDescription(`Cloudflare API token(s) with Zone → Cache Purge permission for the purge zones, a JSON list: ["<token>"] (the first is used). ` +
			"Set it after the first deploy; until then purges fail as unauthorized and land in incidents to replay."),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{ExcludePunctuation: jsii.Bool(true)},
		RemovalPolicy:        awscdk.RemovalPolicy_DESTROY,
	})
	suppress(s, "AwsSolutions-SMG4",
		"A Cloudflare API token is issued in Cloudflare's dashboard; no rotation function can mint one. Operators roll it by putting the new token first in the list (docs/deploy.md#rotation); the consumer re-reads it every few minutes.")
	p.Secrets.CloudflareToken = s
	return s
}

// purgeHook is the purge consumer's stage resources: it is deployed only
// when the stage names Cloudflare zones, with the table, token and zones it
// shares with purge-api.
var purgeHook = kindHook{
	missing: func(p *Platform, tp topology.Topic) (string, string) {
		if p.Stage.HasPurgeZones() {
			return "", ""
		}
		return "evp:no-purge-zones:" + tp.Name, fmt.Sprintf(
			"topic %s: stage %s names no Cloudflare zone (evp:stages.%s.purgeZones or purgeDefaultZone): its consumer is not deployed and its queue is alarmed as unconsumed",
			tp.Name, p.Stage.Name, p.Stage.Name)
	},
	add: (*Platform).purgeConsumer,
}

// purgeConsumer is consumer-purge's own environment and grants.
func (p *Platform) purgeConsumer(env map[string]*string) func(f *Function) {
	// The default zone travels in the environment, the per-tenant zones
	// in SSM (config.go).
	zones, err := json.Marshal(cachepurge.Zones{Default: p.Stage.PurgeDefaultZone})
	if err != nil {
		panic(err)
	}
	secret := p.Secrets.CloudflareToken
	if secret == nil {
		secret = p.newCloudflareToken()
	}
	purgeTable := p.Tables[table.Purge.Name]
	env[wire.EnvPurgeTable] = purgeTable.TableName()
	env[purgeconsumerfn.EnvZones] = jsii.String(string(zones))
	env[purgeconsumerfn.EnvTokenSecretARN] = secret.SecretArn()
	env[purgeconsumerfn.EnvRate] = jsii.String(fmt.Sprint(p.Stage.PurgeRate))
	return func(f *Function) {
		// Jobs (read, ensure, save), daily counters (atomic ADD), the
		// dead-letter mirror (a transaction of two puts).
		allow(f.Role, []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}, purgeTable.TableArn())
		allow(f.Role, []string{"secretsmanager:GetSecretValue"}, secret.SecretArn())
		p.readConfig(f, p.mapParameters(ConfigPurgeZones, p.Stage.PurgeZones), purgeconsumerfn.EnvZonesPath, purgeconsumerfn.EnvZonesVersion)
	}
}
