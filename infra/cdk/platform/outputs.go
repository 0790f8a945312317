package platform

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsssm"
	"github.com/aws/jsii-runtime-go"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/wire/catalog"
)

// Stage discovery: every value below is a stack output (for people and
// scripts reading `cdk deploy` output) and an SSM parameter
// /evp/<stage>/<param> (for the operator CLI: `evp --stage prod …` reads the
// parameters; docs/operations.md).
const (
	ParamRegion           = "region"
	ParamAPIURL           = "api-url"
	ParamWebhookStripeURL = "webhook-stripe-url" // webhookfn.Function's route output
	ParamAdminURL         = "admin-url"
	ParamIngestFunction   = "ingest-function"
	ParamReplayFunction   = "replay-function"
	ParamStateMachine     = "replay-state-machine"
	ParamEventsTable      = "events-table"
	ParamIncidentsTable   = "incidents-table"
	ParamPurgeTable       = "purge-table"
	ParamPurgeFunction    = "purge-function"
	ParamBucket           = "archive-bucket"
	ParamQueueURLs        = "queue-urls"
	ParamDLQURLs          = "dlq-urls"
	ParamAlertsTopic      = "alerts-topic"
	ParamAdminKeySecret   = "admin-api-key-secret"
	ParamStripeSecret     = "stripe-webhook-secret" // webhookfn.Function's secret output
	ParamSubscriberSecret = "subscriber-secrets"
	ParamCloudflareToken  = "cloudflare-token-secret"
	ParamJobsTable        = "jobs-table"
	ParamStripeAPIKey     = "stripe-api-key-secret"
)

// newOutputs publishes what an operator and the CLI need to find the stage.
func (p *Platform) newOutputs() {
	p.publish("Region", ParamRegion, p.Stack.Region(), "AWS region of the stage")
	p.publish("ApiUrl", ParamAPIURL, p.APIURL(), "HTTP API base URL")
	// The routes' URLs the descriptors publish (a provider's webhook
	// endpoint, to paste in its dashboard).
	for _, fn := range catalog.All() {
		for _, r := range fn.Routes {
			if o := r.Output; o != nil && p.Functions[fn.Name] != nil {
				p.publish(o.ID, o.Param, jsii.String(*p.APIURL()+r.Path), o.Description)
			}
		}
	}
	if f, ok := p.Functions["admin-api"]; ok && f != nil {
		p.publish("AdminUrl", ParamAdminURL, jsii.String(*p.APIURL()+"/admin"), "Admin API base URL (bearer key: the admin-api-key secret)")
	}
	p.publish("IngestFunction", ParamIngestFunction, p.Functions["ingest"].Fn.FunctionArn(), "Ingest function ARN (producers invoke it directly)")
	if f, ok := p.Functions["replay"]; ok {
		p.publish("ReplayFunction", ParamReplayFunction, f.Fn.FunctionArn(), "Replay function ARN")
	}
	if p.StateMachine != nil {
		p.publish("ReplayStateMachine", ParamStateMachine, p.StateMachine.StateMachineArn(), "Replay state machine ARN (Step Functions console → Start execution)")
	}
	p.publish("EventsTable", ParamEventsTable, p.Tables[table.Events.Name].TableName(), "Events table (ledger + outbox)")
	p.publish("IncidentsTable", ParamIncidentsTable, p.Tables[table.Incidents.Name].TableName(), "Incidents table")
	if p.PurgeAPI != nil {
		p.publish("PurgeFunction", ParamPurgeFunction, p.PurgeAPI.Fn.FunctionArn(), "Cache purge API function ARN (producers invoke it directly; `evp purge`)")
	}
	if p.Secrets.CloudflareToken != nil {
		p.publish("CloudflareTokenSecret", ParamCloudflareToken, p.Secrets.CloudflareToken.SecretArn(), "Secret to put the Cloudflare API token in (JSON list)")
	}
	p.publish("JobsTable", ParamJobsTable, p.Tables[table.Jobs.Name].TableName(), "Durable jobs table (docs/jobs.md)")
	if p.Secrets.StripeAPIKey != nil {
		p.publish("StripeApiKeySecret", ParamStripeAPIKey, p.Secrets.StripeAPIKey.SecretArn(), "Secret to put the Stripe restricted API key (Events: read) in, for reconciliation (JSON list)")
	}
	p.publish("PurgeTable", ParamPurgeTable, p.Tables[table.Purge.Name].TableName(), "Cache purge table")
	p.publish("ArchiveBucket", ParamBucket, p.Bucket.BucketName(), "Archive bucket (claim-checked payloads, incident bodies, audit archive)")
	p.publish("QueueUrls", ParamQueueURLs, p.queueURLs(false), "Topic queue URLs (JSON: topic → URL)")
	p.publish("DlqUrls", ParamDLQURLs, p.queueURLs(true), "Topic DLQ URLs (JSON: topic → URL)")
	p.publish("AlertsTopic", ParamAlertsTopic, p.Alerts.TopicArn(), "SNS alert topic ARN (subscribe on-call here)")
	p.publish("AdminApiKeySecret", ParamAdminKeySecret, p.Secrets.AdminAPIKey.SecretArn(), "Secret holding the admin API bearer key")
	// The secrets the descriptors publish (where an operator puts the
	// values).
	for _, fn := range catalog.All() {
		if p.Functions[fn.Name] == nil {
			continue
		}
		for _, s := range fn.Secrets {
			if o := s.Output; o != nil {
				p.publish(o.ID, o.Param, p.Secrets.byID[s.ID].SecretArn(), o.Description)
			}
		}
	}
	if len(p.Secrets.Subscribers) > 0 {
		var arns []keyValue
		for _, tp := range p.Topology.Topics {
			if s, ok := p.Secrets.Subscribers[tp.Name]; ok {
				arns = append(arns, keyValue{tp.Name, s.SecretArn()})
			}
		}
		p.publish("SubscriberSecrets", ParamSubscriberSecret, jsonObject(arns), "Subscriber signing secrets (JSON: topic → secret ARN)")
	}
}

// publish adds one stack output and the matching SSM parameter.
func (p *Platform) publish(outputID, param string, value *string, description string) {
	out := awscdk.NewCfnOutput(p.Stack, jsii.String(outputID+"Output"), &awscdk.CfnOutputProps{
		Value:       value,
		Description: jsii.String(description),
	})
	// Outputs are their own namespace in a template: keep the plain name.
	out.OverrideLogicalId(jsii.String(outputID))
	awsssm.NewStringParameter(p.Stack, jsii.String(outputID+"Param"), &awsssm.StringParameterProps{
		ParameterName: jsii.String(p.Stage.ParamPrefix() + "/" + param),
		StringValue:   value,
		Description:   jsii.String(description),
		Tier:          awsssm.ParameterTier_STANDARD,
	})
}
