package platform

import (
	"encoding/json"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdadestinations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/stripeeventbridgefn"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

// Retry bounds of Stripe's EventBridge path. The rule retries a delivery
// to the function that fails (throttled, function being updated) for up
// to a day with EventBridge's backoff; the function's asynchronous
// invocation retries an error it returns (ingest unavailable, topics
// pending, a Connect account not mapped yet) twice with Lambda's backoff
// within six hours. What exhausts either lands on the same DLQ.
const (
	stripeEventBridgeRuleRetries = 185
	stripeEventBridgeRuleMaxAge  = 24 * time.Hour
	stripeEventBridgeFnRetries   = 2
	stripeEventBridgeFnMaxAge    = 6 * time.Hour
)

// StripeEventBridge is the stage's Stripe EventBridge path (nil on a
// stage without stripeEventBridgeSource).
type StripeEventBridge struct {
	Bus      awsevents.EventBus
	Rule     awsevents.Rule
	DLQ      awssqs.Queue
	Function *Function
}

// newStripeEventBridge deploys the adapter of Stripe's EventBridge event
// destination when the stage names its partner event source: the partner
// event bus (associated with the source by its name), a rule matching
// Stripe's source that targets stripe-eventbridge, and a DLQ for what the
// rule or the function's retries give up on. A stage without the setting
// deploys none of it, the function included: nothing else could invoke
// it, and an idle function with the right to invoke ingest is surface for
// nothing. The function reads Stripe's tenant map as webhook-stripe does
// (the same SSM parameters) and may invoke ingest; nothing else.
func (p *Platform) newStripeEventBridge(ingest *Function) {
	source := p.Stage.StripeEventBridgeSource
	if source == "" {
		return
	}
	dlq := awssqs.NewQueue(p.Stack, jsii.String("StripeEventBridgeDLQ"), &awssqs.QueueProps{
		QueueName: jsii.String(stripeeventbridgefn.DLQName(p.Stage.Prefix())),
		// SSE-SQS: EventBridge and Lambda's asynchronous invocation can send
		// to it without a KMS key policy.
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: duration(dlqRetention),
		RemovalPolicy:   awscdk.RemovalPolicy_DESTROY,
	})
	suppress(dlq, "AwsSolutions-SQS3", "This queue is itself the dead-letter queue of the Stripe EventBridge rule's target and of stripe-eventbridge's asynchronous invocations (not of another queue, which is what the rule looks for).")

	t := p.Stage.Tenants(stripe.Source)
	tenants, err := json.Marshal(webhook.TenantMap{Default: t.Default})
	if err != nil {
		panic(err)
	}
	f := p.newFunction(p.spec(stripeeventbridgefn.Function, map[string]*string{
		stripeeventbridgefn.EnvIngestFunction: ingest.Fn.FunctionArn(),
		stripeeventbridgefn.EnvTenantMap:      jsii.String(string(tenants)),
		wire.EnvStage:                         jsii.String(p.Stage.Prefix()),
	}))
	p.readConfig(f, p.mapParameters(webhookfn.AccountTenants(stripe.Declaration), t.Accounts),
		stripeeventbridgefn.EnvAccountTenantsPath, stripeeventbridgefn.EnvAccountTenantsVersion)
	p.grantInvokeIngest(ingest, f, f.Spec.ID)
	awslambda.NewEventInvokeConfig(p.Stack, jsii.String("StripeEventBridgeAsync"), &awslambda.EventInvokeConfigProps{
		Function:      f.Fn,
		RetryAttempts: jsii.Number(stripeEventBridgeFnRetries),
		MaxEventAge:   duration(stripeEventBridgeFnMaxAge),
		OnFailure:     awslambdadestinations.NewSqsDestination(dlq),
	})

	bus := awsevents.NewEventBus(p.Stack, jsii.String("StripeEventBus"), &awsevents.EventBusProps{
		EventSourceName: jsii.String(source),
		Description:     jsii.String("Stripe's event destination for stage " + p.Stage.Name + " (partner event source " + source + ")"),
	})
	rule := awsevents.NewRule(p.Stack, jsii.String("StripeEventBridgeRule"), &awsevents.RuleProps{
		RuleName:     jsii.String(p.Stage.Prefix() + "-stripe-eventbridge"),
		Description:  jsii.String("Every Stripe event on the partner bus to " + p.Stage.Prefix() + "-" + stripeeventbridgefn.Name),
		EventBus:     bus,
		EventPattern: &awsevents.EventPattern{Source: awsevents.Match_Prefix(jsii.String(stripe.PartnerSourcePrefix))},
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(f.Fn, &awseventstargets.LambdaFunctionProps{
			DeadLetterQueue: dlq,
			RetryAttempts:   jsii.Number(stripeEventBridgeRuleRetries),
			MaxEventAge:     duration(stripeEventBridgeRuleMaxAge),
		})},
	})
	p.StripeEventBridge = &StripeEventBridge{Bus: bus, Rule: rule, DLQ: dlq, Function: f}
	p.alarm(alarmSpec{
		ID: "StripeEventBridgeDlq", Name: "stripe-eventbridge-dlq",
		Description: "Stripe events from the EventBridge destination reached " + p.Stage.Prefix() + "-stripe-eventbridge-dlq: the rule could not invoke the adapter, " +
			"or the adapter kept failing (ingest unavailable, an unmapped Connect account). Fix the cause, then redrive it: evp stripe redrive-eventbridge --stage " + p.Stage.Name + " (docs/webhooks.md#stripe-through-amazon-eventbridge).",
		Metric: dlq.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Period: duration(alarmPeriod), Statistic: jsii.String("Maximum"),
		}),
		Threshold: 0,
	})
}
