package platform

import (
	"encoding/json"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/jobsfn"
	"github.com/siteswarm/eventplatform/internal/wire/jobsworkerfn"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

const (
	// JobsSweepSchedule is how often the job sweep rediscovers due jobs
	// (its descriptor's schedule).
	JobsSweepSchedule = jobsfn.SweepEvery
	// PrefixJobs holds large checkpoints and job output (exports, erasure
	// evidence), under jobs/<jobId>/g<generation>/s<step>/v<version>/.
	PrefixJobs = "jobs/"
	// ReconcileTenant is the tenant the daily Stripe reconciliation runs
	// as (the events it publishes carry their own tenants).
	ReconcileTenant = jobsfn.ReconcileTenant
)

// JobsQueues are the wake queue and its DLQ.
type JobsQueues struct {
	Queue awssqs.Queue
	DLQ   awssqs.Queue
}

// newJobsQueues creates the jobs queue: wakes only (ids, never blobs); a
// wake that cannot be parsed or keeps failing lands in the DLQ, and the job
// itself stays due in the table for the sweep.
func (p *Platform) newJobsQueues() {
	dlq := awssqs.NewQueue(p.Stack, jsii.String("JobsDLQ"), &awssqs.QueueProps{
		QueueName:       jsii.String(topology.JobsQueue().DLQName(p.Stage.Prefix())),
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: duration(dlqRetention),
		RemovalPolicy:   awscdk.RemovalPolicy_DESTROY,
	})
	q := awssqs.NewQueue(p.Stack, jsii.String("JobsQueue"), &awssqs.QueueProps{
		QueueName:  jsii.String(topology.JobsQueue().QueueName(p.Stage.Prefix())),
		Encryption: awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL: jsii.Bool(true),
		// Lambda's guidance (the worker's event source has no batch window).
		VisibilityTimeout: duration(topology.EventSourceVisibility(jobsworkerfn.WorkerTimeout, 0)),
		RetentionPeriod:   duration(queueRetention),
		DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(topology.JobsQueueMaxReceiveCount)},
		RemovalPolicy:     awscdk.RemovalPolicy_DESTROY,
	})
	p.Jobs = &JobsQueues{Queue: q, DLQ: dlq}
}

// jobsEnv is what every function using the job engine reads.
func (p *Platform) jobsEnv(env map[string]*string) {
	env[wire.EnvJobsTable] = p.Tables[table.Jobs.Name].TableName()
	env[jobsfn.EnvJobsQueueURL] = p.Jobs.Queue.QueueUrl()
}

// allowJobs grants the engine's own calls of a function that starts jobs:
// job items (the conditional puts of a start, consistent reads), the
// listing indexes and wakes.
func (p *Platform) allowJobs(f *Function, indexes ...string) {
	jt := p.Tables[table.Jobs.Name]
	allow(f.Role, []string{"dynamodb:GetItem", "dynamodb:PutItem"}, jt.TableArn())
	if len(indexes) > 0 {
		var arns []*string
		for _, ix := range indexes {
			arns = append(arns, indexArn(jt, ix))
		}
		allow(f.Role, []string{"dynamodb:Query"}, arns...)
	}
	allow(f.Role, []string{"sqs:SendMessage"}, p.Jobs.Queue.QueueArn())
}

// allowExportDownloads lets a function sign download URLs of finished
// exports (admin-api: the console and GET /admin/jobs/{id}/download;
// replay: evp jobs download): a presigned URL reads with the signer's
// permission, so the role reads the job objects (jobs/<job id>/…), where
// the exports are, and nothing else of the bucket.
func (p *Platform) allowExportDownloads(f *Function) {
	allow(f.Role, []string{"s3:GetObject"}, p.objectsArn(PrefixJobs))
	suppressWildcard(f.Role, `^Resource::<ArchiveBucket[0-9A-F]+\.Arn>/jobs/\*$`,
		"Download links of finished tenant exports (short-lived presigned GETs, signed by this role) read the export's manifest and parts under jobs/<job id>/: that prefix only.")
}

// allowJobTransitions lets a function move jobs along (a step's fenced
// write, cancel, retry, restart): a job that becomes terminal, or is
// revived, updates its idempotency key's expiry in the same transaction
// (dynamodb:UpdateItem). A function that only starts jobs (jobs-sweep,
// import-trigger) never does: make iam-check listed it unused there.
func (p *Platform) allowJobTransitions(f *Function) {
	allow(f.Role, []string{"dynamodb:UpdateItem"}, p.Tables[table.Jobs.Name].TableArn())
}

// newStripeAPIKey is the secret reconciliation reads Stripe's events API
// with.
func (p *Platform) newStripeAPIKey() awssecretsmanager.Secret {
	s := awssecretsmanager.NewSecret(p.Stack, jsii.String("StripeApiKey"), &awssecretsmanager.SecretProps{
		Description: p.secretDescription(`Stripe restricted API key(s) with read access to Events, a JSON list: ["rk_live_…"] (the first is used). ` +
			"Set it after the first deploy; until then the daily reconciliation fails into an incident."),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{ExcludePunctuation: jsii.Bool(true)},
		RemovalPolicy:        awscdk.RemovalPolicy_DESTROY,
	})
	suppress(s, "AwsSolutions-SMG4",
		"A Stripe restricted key is issued in Stripe's dashboard; no rotation function can mint one. Operators roll it by putting the new key first in the list (docs/deploy.md#rotation); the worker re-reads it every few minutes.")
	p.Secrets.StripeAPIKey = s
	return s
}

// newJobs creates the job engine's worker (the jobs queue's consumer:
// one leased step per wake) and sweep (rediscovery every 15 minutes, the
// daily Stripe reconciliation and the daily retention expiries), each with
// only what its steps call.
func (p *Platform) newJobs(ingest *Function) {
	events, incidents := p.Tables[table.Events.Name], p.Tables[table.Incidents.Name]
	// As the webhook reads it: the default here, the accounts in SSM.
	tenants, err := json.Marshal(webhook.TenantMap{Default: p.Stage.StripeDefaultTenant})
	if err != nil {
		panic(err)
	}
	key := p.newStripeAPIKey()
	env := func() map[string]*string {
		e := map[string]*string{
			wire.EnvEventsTable:                   events.TableName(),
			wire.EnvIncidentsTable:                incidents.TableName(),
			wire.EnvBucket:                        p.Bucket.BucketName(),
			wire.EnvIngestFunction:                ingest.Fn.FunctionArn(),
			jobsworkerfn.EnvStripeAPIKeySecretARN: key.SecretArn(),
			jobsworkerfn.EnvStripeTenantMap:       jsii.String(string(tenants)),
			wire.EnvStage:                         jsii.String(p.Stage.Prefix()),
		}
		p.jobsEnv(e)
		return e
	}

	worker := p.newFunction(p.spec(jobsworkerfn.Function, env()))
	// The tenant index: subject erasure rewrites the tenant's earlier
	// exports and the retention expiry deletes its old ones, both found by
	// listing the tenant's jobs.
	p.allowJobs(worker, table.IndexJobsTenant)
	p.allowJobTransitions(worker)
	// Fenced writes carry a condition check on the job item.
	allow(worker.Role, []string{"dynamodb:ConditionCheckItem"}, p.Tables[table.Jobs.Name].TableArn())
	// Export and erasure: the tenant's events (index listing, whole items,
	// an erased event's item collection with its outbox rows, erasure's
	// fenced updates of the ledger item and the rows' lastError) and
	// incidents (listing; opened, resolved and redacted by conditional
	// puts).
	allow(worker.Role, []string{"dynamodb:Query"}, indexArn(events, table.IndexTenantShard), indexArn(events, table.IndexTenant), indexArn(incidents, table.IndexIncidentTenant))
	allow(worker.Role, []string{"dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem"}, events.TableArn())
	allow(worker.Role, []string{"dynamodb:GetItem", "dynamodb:PutItem"}, incidents.TableArn())
	// The retention expiry deletes a tenant's events past their period
	// (the ledger item with its outbox rows) and its resolved incidents,
	// each in a transaction fenced by the step's lease: IAM authorizes each
	// Delete item as dynamodb:DeleteItem on its table.
	allow(worker.Role, []string{"dynamodb:DeleteItem"}, events.TableArn(), incidents.TableArn())
	// Checkpoints and output under jobs/; claim-checked payloads read for
	// exports. Erasure deletes payload objects and incident bodies: the
	// bucket is versioned, so it deletes each version by id
	// (s3:DeleteObjectVersion; a plain DeleteObject would only stack a
	// delete marker on the data) and proves none is left by listing the
	// key's versions (s3:ListBucketVersions, under those prefixes only).
	allow(worker.Role, []string{"s3:PutObject", "s3:GetObject"}, p.objectsArn(PrefixJobs))
	allow(worker.Role, []string{"s3:GetObject", "s3:DeleteObjectVersion"}, p.objectsArn(PrefixPayloads), p.objectsArn(PrefixIncidents))
	p.allowErasure(worker)
	p.allowListVersions(worker.Role, PrefixPayloads, PrefixIncidents, PrefixArchive, PrefixJobs, PrefixImports)
	suppressWildcard(worker.Role, `^Resource::<ArchiveBucket[0-9A-F]+\.Arn>/(jobs|payloads|incidents|archive|imports)/\*$`,
		"Job objects are keyed per job and attempt (jobs/<job>/…); subject erasure must delete a subject's claim-checked payloads (payloads/<tenant>/<event>/…) and incident bodies (incidents/<tenant>/<incident>/…), and rewrite the audit archive (archive/<topic>/<date>/<tenant>/…), exports (jobs/<export>/…), import files and their error reports (imports/<tenant>/…, jobs/<import>/…) without the subject's records; the retention expiry deletes a tenant's past archive days, exports and imports: those prefixes only.")
	// Reconciliation publishes through ingest and reads its Stripe key.
	allow(worker.Role, []string{"lambda:InvokeFunction"}, ingest.Fn.FunctionArn())
	p.allowInvokeIngest(ingest, "JobsWorker", worker.Role)
	allow(worker.Role, []string{"secretsmanager:GetSecretValue"}, key.SecretArn())
	p.readConfig(worker, p.mapParameters(ConfigStripeAccountTenants, p.Stage.StripeAccountTenants), jobsworkerfn.EnvStripeAccountTenantsPath, webhookfn.EnvAccountTenantsVersion)
	p.eventSources(worker)
	p.JobsWorker = worker

	// The sweep only wakes (a queue is configured): job items and the due
	// index, and the queue. The daily schedule's start is a conditional
	// put.
	sweepEnv := map[string]*string{
		wire.EnvIncidentsTable: incidents.TableName(),
		wire.EnvBucket:         p.Bucket.BucketName(),
		wire.EnvStage:          jsii.String(p.Stage.Prefix()),
	}
	p.jobsEnv(sweepEnv)
	sweep := p.newFunction(p.spec(jobsfn.SweepFunction, sweepEnv))
	p.allowJobs(sweep, table.IndexJobsDue)
	// The daily retention expiry starts a job per tenant with a policy:
	// the policies are one item collection of the jobs table, listed with
	// a Query (retention.AllTenants).
	allow(sweep.Role, []string{"dynamodb:Query"}, p.Tables[table.Jobs.Name].TableArn())
	p.schedules(sweep)
	p.JobsSweep = sweep
}
