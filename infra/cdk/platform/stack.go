package platform

import (
	"errors"
	"fmt"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"regexp"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire/consumerkinds"
)

// Props configure one stage's stack.
type Props struct {
	Stage    Stage
	Topology topology.Topology
	// AssetDir holds the Lambda binaries, one <role>/bootstrap each
	// (`make build` writes bin/<role>/bootstrap).
	AssetDir string
}

// Platform is one stage of the event platform: the whole deployment in one
// stack, so a stage is created, updated and deleted as a unit. Fields expose
// the resources to the tests and to later additions.
type Platform struct {
	// Stack is the scope of every resource (jsii does not allow embedding
	// it in a Go struct that is itself used as a construct).
	Stack awscdk.Stack

	Stage    Stage
	Topology topology.Topology
	AssetDir string

	Tables     map[string]awsdynamodb.Table // by table.Def.Name
	Queues     map[string]*TopicQueues      // by topic name
	Bucket     awss3.Bucket
	AccessLogs awss3.Bucket
	// AutoDeleteLogs is the log group of CDK's bucket auto-delete
	// provider (stages that do not retain data; nil otherwise).
	AutoDeleteLogs awslogs.LogGroup
	AlertsKey      awskms.Key
	Alerts         awssns.Topic
	Secrets        Secrets
	API            awsapigatewayv2.HttpApi
	// Functions by physical name suffix ("ingest", "consumer-billing-events").
	Functions map[string]*Function
	// Consumers by topic; topics whose consumer is not deployed (an HTTP
	// topic without a subscriber, cache.purge without zones) are absent and
	// alarmed on instead (Unconsumed).
	Consumers map[string]*Function
	// consumerSources are the consumers' SQS event sources (their event
	// source mappings), by topic.
	consumerSources map[string]awslambdaeventsources.SqsEventSource
	// Health is the subscriber-health function (nil without a watched
	// topic).
	Health   *Function
	PurgeAPI *Function
	// StripeEventBridge is Stripe's EventBridge path (nil without
	// stripeEventBridgeSource).
	StripeEventBridge *StripeEventBridge
	// Jobs are the durable job engine's wake queue and DLQ; JobsWorker and
	// JobsSweep its functions.
	Jobs *JobsQueues
	// Imports is the queue of the bucket's notifications for imports/.
	Imports *ImportsQueues
	// NotificationsLogs is the log group of CDK's bucket notifications
	// handler (a deploy-time custom resource).
	NotificationsLogs awslogs.LogGroup
	JobsWorker        *Function
	JobsSweep         *Function
	Unconsumed        []string
	Archiver          *Function
	StateMachine      awsstepfunctions.StateMachine
	Alarms            []awscloudwatch.Alarm

	// configMaps are the stage maps kept in SSM (mapParameters).
	configMaps map[string]*mapConfig
	// externalAlarmTopics are the stage's alarmTopicArns.
	externalAlarmTopics []awssns.ITopic

	apiStage      awsapigatewayv2.CfnStage
	routeSettings map[string]any
}

// NewPlatform builds the stage's stack.
func NewPlatform(scope constructs.Construct, props Props) *Platform {
	if err := errors.Join(props.Topology.Validate(), consumerkinds.Check(props.Topology)); err != nil {
		panic("topology: " + err.Error())
	}
	if err := props.Stage.CheckTopology(props.Topology); err != nil {
		panic(err.Error())
	}
	st := props.Stage
	sp := &awscdk.StackProps{
		StackName:   jsii.String(st.StackName()),
		Description: jsii.String("Serverless event platform, stage " + st.Name),
		// A production stack cannot be deleted until this is turned off.
		TerminationProtection: jsii.Bool(st.Production),
		Tags: &map[string]*string{
			"evp:stage": jsii.String(st.Name),
			"evp:app":   jsii.String("eventplatform"),
		},
	}
	if st.Account != "" || st.Region != "" {
		sp.Env = &awscdk.Environment{Account: strOrNil(st.Account), Region: strOrNil(st.Region)}
	}
	p := &Platform{
		Stack:     awscdk.NewStack(scope, jsii.String(st.StackName()), sp),
		Stage:     st,
		Topology:  props.Topology,
		AssetDir:  props.AssetDir,
		Functions: map[string]*Function{},
		Consumers: map[string]*Function{},

		consumerSources: map[string]awslambdaeventsources.SqsEventSource{},
	}
	p.newAlerts()
	p.newTables()
	p.newBucket()
	p.newQueues()
	p.newJobsQueues()
	p.newSecrets()
	ingest := p.newIngest()
	p.newAPI()
	p.newWebhooks(ingest)
	p.newStripeEventBridge(ingest)
	p.newPurgeAPI(ingest)
	p.newJobs(ingest)
	p.newImports(p.JobsWorker)
	p.newConsumers()
	p.newRecovery()
	p.newAdmin()
	p.newHealth()
	p.newAlarms()
	p.newOutputs()
	p.checkReservations()
	return p
}

// checkReservations refuses a reservation for a function the stage does not
// deploy (a typo would silently reserve nothing). The quota the stage needs
// is printed by the app (Stage.ConcurrencyNote).
func (p *Platform) checkReservations() {
	for _, fn := range sortedKeys(p.Stage.ReservedConcurrency) {
		if _, ok := p.Functions[fn]; !ok {
			panic(fmt.Sprintf("stage %s: reservedConcurrency names %q, which is not a function of the stage (one of %s)", p.Stage.Name, fn, strings.Join(sortedKeys(p.Functions), ", ")))
		}
	}
}

func strOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return jsii.String(s)
}

var nonAlnum = regexp.MustCompile(`[^A-Za-z0-9]+`)

// logicalName turns "billing.events" into "BillingEvents" for construct ids.
func logicalName(s string) string {
	var b strings.Builder
	for _, part := range nonAlnum.Split(s, -1) {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// slug turns "billing.events" into "billing-events" for physical names.
func slug(s string) string {
	return strings.Trim(nonAlnum.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
