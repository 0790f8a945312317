package platform

import (
	"fmt"
	"regexp"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/jsii-runtime-go"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/consumerfn"
	"github.com/siteswarm/eventplatform/internal/wire/consumerkinds"
)

// newConsumers creates one consumer function per topic, of its kind's
// binary (internal/wire/consumerkinds), fed by an SQS event source with the
// topology's batch size, window and maximum concurrency and
// ReportBatchItemFailures. Each consumer's role reaches its own queue and
// DLQ only, plus what its kind's descriptor asks for. A topic whose stage
// lacks what its consumer needs (a subscriber URL, purge zones) gets no
// consumer; its queue is alarmed as unconsumed.
func (p *Platform) newConsumers() {
	for _, tp := range p.Topology.Topics {
		k, ok := consumerkinds.Of(tp.Consumer)
		if !ok {
			p.Unconsumed = append(p.Unconsumed, tp.Name)
			continue
		}
		hook := kindHooks[k.Kind]
		switch {
		case p.Stage.Unconsumed(tp.Name):
			// Left out on purpose (unconsumedTopics): no warning.
			p.Unconsumed = append(p.Unconsumed, tp.Name)
			continue
		case k.Subscriber != "" && p.Stage.Subscribers[tp.Name] == "":
			// Validate refuses this for production stages.
			awscdk.Annotations_Of(p.Stack).AddWarningV2(jsii.String("evp:no-subscriber:"+tp.Name), jsii.String(fmt.Sprintf(
				"topic %s has no subscriber URL in stage %s (evp:stages.%s.subscribers): its consumer is not deployed and its queue is alarmed as unconsumed",
				tp.Name, p.Stage.Name, p.Stage.Name)), nil)
			p.Unconsumed = append(p.Unconsumed, tp.Name)
			continue
		case hook.missing != nil:
			if id, why := hook.missing(p, tp); why != "" {
				// Validate refuses this for production stages.
				awscdk.Annotations_Of(p.Stack).AddWarningV2(jsii.String(id), jsii.String(why), nil)
				p.Unconsumed = append(p.Unconsumed, tp.Name)
				continue
			}
		}
		p.newConsumer(tp, k)
	}
}

// kindHook is what the CDK app adds for a kind whose consumer uses stage
// resources of its own, beyond its descriptor (purge.go: the purge table,
// the Cloudflare token and the zones, shared with purge-api).
type kindHook struct {
	// missing names what the stage lacks for the kind's consumer (an
	// annotation id and message), or "".
	missing func(p *Platform, tp topology.Topic) (id, why string)
	// add sets the kind's environment and returns its grants.
	add func(p *Platform, env map[string]*string) func(*Function)
}

var kindHooks = map[topology.ConsumerKind]kindHook{topology.ConsumerPurge: purgeHook}

func (p *Platform) newConsumer(tp topology.Topic, k consumerfn.Kind) {
	qs := p.Queues[tp.Name]
	events, incidents := p.Tables[table.Events.Name], p.Tables[table.Incidents.Name]
	env := map[string]*string{
		consumerfn.EnvTopic:    jsii.String(tp.Name),
		consumerfn.EnvQueueURL: qs.Queue.QueueUrl(),
		consumerfn.EnvDLQURL:   qs.DLQ.QueueUrl(),
		wire.EnvEventsTable:    events.TableName(),
		wire.EnvStage:          jsii.String(p.Stage.Prefix()),
		wire.EnvIncidentsTable: incidents.TableName(),
	}
	var secret awssecretsmanager.Secret
	if sec := k.Secret; sec != nil {
		secret = awssecretsmanager.NewSecret(p.Stack, jsii.String(logicalName(tp.Name)+sec.ID), &awssecretsmanager.SecretProps{
			Description: p.secretDescription(sec.Description(tp.Name)),
			// A random placeholder: the consumer fails (and its messages
			// are retried) until an operator sets the real list.
			GenerateSecretString: &awssecretsmanager.SecretStringGenerator{ExcludePunctuation: jsii.Bool(true)},
			RemovalPolicy:        awscdk.RemovalPolicy_DESTROY,
		})
		suppress(secret, "AwsSolutions-SMG4", sec.WhyNoRotation)
		p.Secrets.Subscribers[tp.Name] = secret
		env[sec.EnvARN] = secret.SecretArn()
	}
	if k.Subscriber != "" {
		env[k.Subscriber] = jsii.String(p.Stage.Subscribers[tp.Name])
	}
	if o := k.Objects; o != nil {
		env[o.EnvBucket] = p.Bucket.BucketName()
		if o.EnvRoot != "" {
			env[o.EnvRoot] = jsii.String(o.Root)
		}
	}
	var extra func(*Function)
	if add := kindHooks[k.Kind].add; add != nil {
		extra = add(p, env)
	}
	desc := consumerfn.Function(tp, k)
	name := desc.Name
	if n := len(p.Stage.Prefix()) + 1 + len(name); n > 64 {
		panic(fmt.Sprintf("topic %s: function name %s-%s is %d characters; Lambda allows 64 (shorten the topic or the stage name)", tp.Name, p.Stage.Prefix(), name, n))
	}
	if !tp.Breaker.Off {
		// Breaker transitions are applied at once (an asynchronous invoke
		// of the subscriber-health function).
		p.allowNotifyHealthEnv(env)
	}
	f := p.newFunction(p.spec(desc, env))
	// Idempotency claim and outcome on the outbox row (UpdateItem, and a
	// GetItem to tell completed from busy; a missing row is created in a
	// transaction with a check of its ledger item); replay attestation on
	// the incident (read, conditional put).
	allow(f.Role, []string{"dynamodb:UpdateItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:ConditionCheckItem"}, events.TableArn())
	if k.Batch {
		// A batch handler's batch claims and completes its rows in PartiQL
		// UPDATE statements (BatchExecuteStatement: 1 WRU a row, where a
		// transaction costs 2). Only the kinds whose handler is a batch
		// handler issue them, so only their roles get it.
		allow(f.Role, []string{"dynamodb:PartiQLUpdate"}, events.TableArn())
	}
	allow(f.Role, []string{"dynamodb:GetItem", "dynamodb:PutItem"}, incidents.TableArn())
	// Backoff is a visibility change on its own queue; poison goes to its
	// own DLQ.
	allow(f.Role, []string{"sqs:ChangeMessageVisibility"}, qs.Queue.QueueArn())
	allow(f.Role, []string{"sqs:SendMessage"}, qs.DLQ.QueueArn())
	if !tp.FIFO {
		// A completion the events table would not take within the
		// invocation travels on in a copy of the message, sent to its own
		// queue (consume: carry.go); FIFO topics never send one.
		allow(f.Role, []string{"sqs:SendMessage"}, qs.Queue.QueueArn())
	}
	// Claim-checked payloads are rehydrated.
	allow(f.Role, []string{"s3:GetObject"}, p.objectsArn(PrefixPayloads))
	wildcards := `^Resource::<ArchiveBucket[0-9A-F]+\.Arn>/payloads/\*$`
	if secret != nil {
		allow(f.Role, []string{"secretsmanager:GetSecretValue"}, secret.SecretArn())
	}
	if o := k.Objects; o != nil {
		prefix := o.Prefix(tp.Name)
		allow(f.Role, o.Actions, p.objectsArn(prefix))
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
	// The topology's batch size, window and maximum concurrency, with
	// partial batch responses (consumerfn.QueueSource), on this queue only.
	p.consumerSources[tp.Name] = p.eventSources(f)[0]
	p.Consumers[tp.Name] = f
}

// retention is the ledger retention as a duration string ("336h").
func (p *Platform) retention() *string {
	return jsii.String(fmt.Sprintf("%dh", p.Stage.LedgerRetentionDays*24))
}
