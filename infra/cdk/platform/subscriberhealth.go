package platform

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/subscriberhealth"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/subscriberhealthfn"
)

// ParamHealthFunction is the SSM parameter naming the subscriber-health
// function (`evp topics pause|resume` tell it of a change).
const ParamHealthFunction = "health-function"

// healthFunctionName is the subscriber-health function's physical name:
// known before the function exists, so the consumers and admin-api can
// name and invoke it without a reference (the function's policy refers to
// their event source mappings, and a reference back would be a cycle).
func (p *Platform) healthFunctionName() string {
	return p.Stage.Prefix() + "-" + subscriberhealthfn.Name
}

// healthFunctionArn is its ARN, built from the name.
func (p *Platform) healthFunctionArn() *string {
	return p.Stack.FormatArn(&awscdk.ArnComponents{
		Service: jsii.String("lambda"), Resource: jsii.String("function"),
		ResourceName: jsii.String(p.healthFunctionName()), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
	})
}

// allowNotifyHealthEnv names the subscriber-health function in a
// function's environment; the function's role then gets
// lambda:InvokeFunction on that function only (healthFunctionArn).
func (p *Platform) allowNotifyHealthEnv(env map[string]*string) {
	env[wire.EnvHealthFunction] = jsii.String(p.healthFunctionName())
}

// newHealth creates the subscriber-health function: every minute (and on
// the notices of the consumers and admin-api) it moves each deployed
// consumer's breaker along its policy and applies the state to that
// consumer's SQS event source mapping. Its role may read and update those
// mappings only, read and write the topics' health records, read the
// topic queues' depth, and publish alerts.
func (p *Platform) newHealth() {
	events := p.Tables[table.Events.Name]
	var (
		mappings []keyValue
		esmArns  []*string
		queues   []*string
		topics   []string
	)
	for _, tp := range p.Topology.Topics {
		c, ok := p.Consumers[tp.Name]
		if !ok || tp.Breaker.Off {
			continue
		}
		src := p.consumerSources[tp.Name]
		fn, _ := json.Marshal(p.Stage.Prefix() + "-" + c.Spec.Name)
		mappings = append(mappings, keyValue{tp.Name, jsii.String(`{"function":` + string(fn) + `,"queueArn":"` + *p.Queues[tp.Name].Queue.QueueArn() + `"}`)})
		esmArns = append(esmArns, src.EventSourceMappingArn())
		queues = append(queues, p.Queues[tp.Name].Queue.QueueArn())
		topics = append(topics, tp.Name)
	}
	if len(topics) == 0 {
		return
	}
	f := p.newFunction(p.spec(subscriberhealthfn.Function, map[string]*string{
		wire.EnvEventsTable:                 events.TableName(),
		wire.EnvQueueURLs:                   p.queueURLs(false),
		wire.EnvStage:                       jsii.String(p.Stage.Prefix()),
		subscriberhealthfn.EnvMappings:      jsonObjects(mappings),
		subscriberhealthfn.EnvAlertTopicARN: p.Alerts.TopicArn(),
	}))
	// The health records: read, and replaced conditionally (PutItem).
	allow(f.Role, []string{"dynamodb:GetItem", "dynamodb:PutItem"}, events.TableArn())
	// Backlogs.
	allow(f.Role, []string{"sqs:GetQueueAttributes"}, queues...)
	// The consumers' own mappings, and nothing else: read and set.
	allow(f.Role, []string{"lambda:GetEventSourceMapping", "lambda:UpdateEventSourceMapping"}, esmArns...)
	// ListEventSourceMappings supports no resource-level permission (its
	// resource is "*"): the function lists by its consumers' names and
	// queues and acts only on the mappings above.
	f.Role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("lambda:ListEventSourceMappings"), Resources: jsii.Strings("*"),
	}))
	suppressWildcard(f.Role, `^Resource::\*$`,
		"lambda:ListEventSourceMappings supports no resource-level permissions (only '*'); it reads mapping metadata. The function finds its consumers' mappings with it and may get or update only those (their ARNs), never another mapping.")
	p.grantPublishAlerts(f)
	p.schedules(f)
	p.Health = f
	p.publish("HealthFunction", ParamHealthFunction, f.Fn.FunctionArn(), "Subscriber-health function ARN (evp topics pause|resume notify it)")
	for _, name := range topics {
		tp, _ := p.Topology.Topic(name)
		b := tp.Breaker.WithDefaults()
		p.alarm(alarmSpec{
			ID: logicalName(name) + "SubscriberDown", Name: slug(name) + "-subscriber-down",
			Description: fmt.Sprintf("The %s subscriber's breaker has been open (or the topic paused) for more than %s (metric %s): its events wait on the queue (kept %s) and nothing is delivered. `evp topics list`; see docs/operations.md \"Subscriber health\".",
				name, b.EscalateAfter, subscriberhealth.MetricOutageSeconds, "14 days"),
			Metric:    p.emf(subscriberhealth.MetricOutageSeconds, map[string]string{subscriberhealth.DimensionTopic: name}, "Maximum"),
			Threshold: b.EscalateAfter.Seconds(),
		})
	}
}
