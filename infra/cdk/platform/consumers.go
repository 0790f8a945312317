package platform

import (
	"fmt"
	"regexp"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/jsii-runtime-go"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/topicarchive"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/archiveconsumerfn"
	"github.com/siteswarm/eventplatform/internal/wire/consumerfn"
	"github.com/siteswarm/eventplatform/internal/wire/httpconsumerfn"
)

// consumerRole is the binary serving each consumer kind.
var consumerRole = map[topology.ConsumerKind]string{
	topology.ConsumerHTTP:    RoleConsumerHTTP,
	topology.ConsumerArchive: RoleConsumerArchive,
	topology.ConsumerPurge:   RoleConsumerPurge,
}

// newConsumers creates one consumer function per topic, fed by an SQS event
// source with the topology's batch size, window and maximum concurrency and
// ReportBatchItemFailures. Each consumer's role reaches its own queue and
// DLQ only.
func (p *Platform) newConsumers() {
	for _, tp := range p.Topology.Topics {
		binary, ok := consumerRole[tp.Consumer]
		if !ok {
			p.Unconsumed = append(p.Unconsumed, tp.Name)
			continue
		}
		if tp.Consumer == topology.ConsumerHTTP && p.Stage.Subscribers[tp.Name] == "" {
			// Validate refuses this for production stages.
			awscdk.Annotations_Of(p.Stack).AddWarningV2(jsii.String("evp:no-subscriber:"+tp.Name), jsii.String(fmt.Sprintf(
				"topic %s has no subscriber URL in stage %s (evp:stages.%s.subscribers): its consumer is not deployed and its queue is alarmed as unconsumed",
				tp.Name, p.Stage.Name, p.Stage.Name)), nil)
			p.Unconsumed = append(p.Unconsumed, tp.Name)
			continue
		}
		if tp.Consumer == topology.ConsumerPurge && !p.Stage.HasPurgeZones() {
			// Validate refuses this for production stages.
			awscdk.Annotations_Of(p.Stack).AddWarningV2(jsii.String("evp:no-purge-zones:"+tp.Name), jsii.String(fmt.Sprintf(
				"topic %s: stage %s names no Cloudflare zone (evp:stages.%s.purgeZones or purgeDefaultZone): its consumer is not deployed and its queue is alarmed as unconsumed",
				tp.Name, p.Stage.Name, p.Stage.Name)), nil)
			p.Unconsumed = append(p.Unconsumed, tp.Name)
			continue
		}
		p.newConsumer(tp, binary)
	}
}

func (p *Platform) newConsumer(tp topology.Topic, binary string) {
	qs := p.Queues[tp.Name]
	events, incidents := p.Tables[table.Events.Name], p.Tables[table.Incidents.Name]
	env := map[string]*string{
		consumerfn.EnvTopic:    jsii.String(tp.Name),
		consumerfn.EnvQueueURL: qs.Queue.QueueUrl(),
		consumerfn.EnvDLQURL:   qs.DLQ.QueueUrl(),
		wire.EnvEventsTable:    events.TableName(),
		wire.EnvStage:          jsii.String(p.Stage.Prefix()),
		wire.EnvIncidentsTable: incidents.TableName(),
		wire.EnvRetention:      p.retention(),
	}
	var secret awssecretsmanager.Secret
	var extra func(*Function)
	switch tp.Consumer {
	case topology.ConsumerHTTP:
		secret = awssecretsmanager.NewSecret(p.Stack, jsii.String(logicalName(tp.Name)+"SubscriberSecret"), &awssecretsmanager.SecretProps{
			Description: p.secretDescription("Standard Webhooks signing secrets of the " + tp.Name + ` subscriber, a JSON list: ["whsec_<base64>"]. ` +
				"Set it after the first deploy and share it with the subscriber; list two during a rotation."),
			// A random placeholder: deliveries fail (and are retried) until
			// an operator sets the real list.
			GenerateSecretString: &awssecretsmanager.SecretStringGenerator{ExcludePunctuation: jsii.Bool(true)},
			RemovalPolicy:        awscdk.RemovalPolicy_DESTROY,
		})
		suppress(secret, "AwsSolutions-SMG4",
			"A signing secret shared with an external subscriber: rotating it needs the subscriber to accept the new one, so operators roll it with an overlap window (docs/deploy.md#rotation); the consumer re-reads the list every few minutes.")
		p.Secrets.Subscribers[tp.Name] = secret
		env[httpconsumerfn.EnvSubscriberURL] = jsii.String(p.Stage.Subscribers[tp.Name])
		env[httpconsumerfn.EnvSecretARN] = secret.SecretArn()
	case topology.ConsumerArchive:
		env[wire.EnvBucket] = p.Bucket.BucketName()
		env[archiveconsumerfn.EnvPrefix] = jsii.String(topicarchive.DefaultPrefix)
	case topology.ConsumerPurge:
		extra = p.purgeConsumer(env)
	}
	name := "consumer-" + slug(tp.Name)
	if n := len(p.Stage.Prefix()) + 1 + len(name); n > 64 {
		panic(fmt.Sprintf("topic %s: function name %s-%s is %d characters; Lambda allows 64 (shorten the topic or the stage name)", tp.Name, p.Stage.Prefix(), name, n))
	}
	if !tp.Breaker.Off {
		// Breaker transitions are applied at once (an asynchronous invoke
		// of the subscriber-health function).
		p.allowNotifyHealthEnv(env)
	}
	f := p.newFunction(fnSpec{
		ID:          "Consumer" + logicalName(tp.Name),
		Binary:      binary,
		Name:        name,
		Description: fmt.Sprintf("Consumer of %s (%s)", tp.Name, tp.Consumer),
		Timeout:     tp.ConsumerTimeout,
		MemoryMB:    256,
		Env:         env,
	})
	// Idempotency claim and outcome on the outbox row (UpdateItem, and a
	// GetItem to tell completed from busy; a missing row is created in a
	// transaction with a check of its ledger item); replay attestation on
	// the incident (read, conditional put).
	allow(f.Role, []string{"dynamodb:UpdateItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:ConditionCheckItem"}, events.TableArn())
	allow(f.Role, []string{"dynamodb:GetItem", "dynamodb:PutItem"}, incidents.TableArn())
	// Backoff is a visibility change on its own queue; poison goes to its
	// own DLQ.
	allow(f.Role, []string{"sqs:ChangeMessageVisibility"}, qs.Queue.QueueArn())
	allow(f.Role, []string{"sqs:SendMessage"}, qs.DLQ.QueueArn())
	// Claim-checked payloads are rehydrated.
	allow(f.Role, []string{"s3:GetObject"}, p.objectsArn(PrefixPayloads))
	wildcards := `^Resource::<ArchiveBucket[0-9A-F]+\.Arn>/payloads/\*$`
	switch tp.Consumer {
	case topology.ConsumerHTTP:
		allow(f.Role, []string{"secretsmanager:GetSecretValue"}, secret.SecretArn())
	case topology.ConsumerArchive:
		prefix := topicarchive.DefaultPrefix + "/" + tp.Name + "/"
		allow(f.Role, []string{"s3:PutObject"}, p.objectsArn(prefix))
		wildcards = `^Resource::<ArchiveBucket[0-9A-F]+\.Arn>/(payloads|` + regexp.QuoteMeta(prefix[:len(prefix)-1]) + `)/\*$`
	}
	if extra != nil {
		extra(f)
	}
	if !tp.Breaker.Off {
		allow(f.Role, []string{"lambda:InvokeFunction"}, p.healthFunctionArn())
	}
	suppressWildcard(f.Role, wildcards,
		"Object keys are per event (payloads/<tenant>/<event>/…) or per batch (archive/<topic>/<date>/…): the grant is that prefix of the archive bucket and nothing else.")

	if tp.FIFO && tp.BatchWindow > 0 {
		panic(fmt.Sprintf("topic %s: SQS FIFO event sources take no batch window", tp.Name))
	}
	src := &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(float64(tp.BatchSize)),
		ReportBatchItemFailures: jsii.Bool(true),
	}
	if tp.BatchWindow > 0 {
		src.MaxBatchingWindow = duration(tp.BatchWindow)
	}
	if tp.MaxConcurrency > 0 {
		src.MaxConcurrency = jsii.Number(float64(tp.MaxConcurrency))
	}
	// Grants the event source's ReceiveMessage, DeleteMessage,
	// ChangeMessageVisibility, GetQueueAttributes and GetQueueUrl on this
	// queue only.
	es := awslambdaeventsources.NewSqsEventSource(qs.Queue, src)
	f.Fn.AddEventSource(es)
	p.consumerSources[tp.Name] = es
	p.Consumers[tp.Name] = f
}

// retention is the ledger retention as a duration string ("336h").
func (p *Platform) retention() *string {
	return jsii.String(fmt.Sprintf("%dh", p.Stage.LedgerRetentionDays*24))
}
