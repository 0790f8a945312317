package platform

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/ingestfn"
)

// newIngest creates the private ingestion function. It has no function URL
// and no API route: its resource policy admits the webhook adapters' roles
// (added as they are created) and the stage's producer principals, and
// nothing else. Same-account producers also need lambda:InvokeFunction in
// their own identity policy (docs/deploy.md).
func (p *Platform) newIngest() *Function {
	f := p.newFunction(p.spec(ingestfn.Function, map[string]*string{
		wire.EnvEventsTable: p.Tables[table.Events.Name].TableName(),
		wire.EnvBucket:      p.Bucket.BucketName(),
		wire.EnvQueueURLs:   p.queueURLs(false),
		wire.EnvRetention:   p.retention(),
	}))
	if p.Stage.LegacyLedgerKeysUntil != "" {
		p.addEnvironment(f, ingestfn.EnvLegacyKeysUntil, jsii.String(p.Stage.LegacyLedgerKeysUntil))
	}
	events := p.Tables[table.Events.Name]
	// Commit is a TransactWriteItems of Puts (IAM checks PutItem per item)
	// and, while legacy keys are checked, a ConditionCheck; Load is a
	// Query of the event's item collection, Claim/Mark* are conditional
	// UpdateItems, and a batch's enqueued marks are PartiQL UPDATEs
	// (BatchExecuteStatement: IAM checks PartiQLUpdate per statement; an
	// UPDATE never creates an item); a batch's sends are recorded in one
	// receipt item (PutItem), which Load reads back with GetItem for a row
	// still pending under a batch's lease. Nothing is ever deleted. SQS
	// checks a SendMessageBatch as SendMessage.
	allow(f.Role, []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query", "dynamodb:GetItem", "dynamodb:ConditionCheckItem", "dynamodb:PartiQLUpdate"}, events.TableArn())
	// A retry of an erased event deletes the claim-checked payload it
	// stored before its commit found the event (every version of that
	// key: listed, then deleted by version id).
	allow(f.Role, []string{"s3:PutObject", "s3:DeleteObjectVersion"}, p.objectsArn(PrefixPayloads))
	p.allowListVersions(f.Role, PrefixPayloads)
	suppressWildcard(f.Role, `^Resource::<ArchiveBucket[0-9A-F]+\.Arn>/payloads/\*$`,
		"Claim-checked payloads are written under payloads/<tenant>/<event>/<sha256>.json (and deleted again when the event turns out erased); the key is per event, so the grant is the payloads/ prefix and nothing else in the bucket.")
	allow(f.Role, []string{"sqs:SendMessage"}, p.topicQueueArns()...)
	for i, principal := range p.Stage.ProducerPrincipals {
		p.allowInvokeIngest(f, fmt.Sprintf("Producer%d", i), producerPrincipal(principal))
	}
	return f
}

// allowInvokeIngest adds one principal to the ingest function's resource
// policy (an AWS::Lambda::Permission for the unqualified function).
func (p *Platform) allowInvokeIngest(ingest *Function, id string, principal awsiam.IPrincipal) {
	ingest.Fn.AddPermission(jsii.String("Invoke"+id), &awslambda.Permission{
		Principal: principal,
		Action:    jsii.String("lambda:InvokeFunction"),
	})
}

// producerPrincipal accepts an account id or a role/user ARN.
func producerPrincipal(s string) awsiam.IPrincipal {
	if accountID.MatchString(s) {
		return awsiam.NewAccountPrincipal(jsii.String(s))
	}
	return awsiam.NewArnPrincipal(jsii.String(s))
}

// topicQueueArns are the ARNs of every topic's primary queue.
func (p *Platform) topicQueueArns() []*string {
	var out []*string
	for _, tp := range p.Topology.Topics {
		out = append(out, p.Queues[tp.Name].Queue.QueueArn())
	}
	return out
}

// dlqArns are the ARNs of every topic's DLQ.
func (p *Platform) dlqArns() []*string {
	var out []*string
	for _, tp := range p.Topology.Topics {
		out = append(out, p.Queues[tp.Name].DLQ.QueueArn())
	}
	return out
}
