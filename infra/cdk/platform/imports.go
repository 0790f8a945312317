package platform

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3notifications"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/importtriggerfn"
)

// PrefixImports is where tenants (or operators for them) drop files to
// import: imports/<tenant>/…; each file's error report is written next to
// it (<key>.errors.ndjson).
const PrefixImports = topology.ImportsPrefix

// ImportsQueues are the queue the bucket's notifications for imports/ go
// to, and its DLQ.
type ImportsQueues struct {
	Queue awssqs.Queue
	DLQ   awssqs.Queue
}

// newImports wires file-drop imports: the bucket sends its object
// creations under imports/ to the imports queue (S3 → SQS, so a
// notification survives a throttled or failing trigger and dead-letters
// after its receives), import-trigger starts a file-import job per new
// object version (jobs table and wake queue only), and jobs-worker reads
// the file and writes its report (those objects only).
func (p *Platform) newImports(worker *Function) {
	dlq := awssqs.NewQueue(p.Stack, jsii.String("ImportsDLQ"), &awssqs.QueueProps{
		QueueName:       jsii.String(topology.ImportsQueue().DLQName(p.Stage.Prefix())),
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: duration(dlqRetention),
		RemovalPolicy:   awscdk.RemovalPolicy_DESTROY,
	})
	q := awssqs.NewQueue(p.Stack, jsii.String("ImportsQueue"), &awssqs.QueueProps{
		QueueName: jsii.String(topology.ImportsQueue().QueueName(p.Stage.Prefix())),
		// SSE-SQS: S3 can send to it without a KMS key policy.
		Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		VisibilityTimeout: duration(topology.ImportsQueue().VisibilityTimeout),
		RetentionPeriod:   duration(queueRetention),
		DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(topology.ImportsQueueMaxReceiveCount)},
		RemovalPolicy:     awscdk.RemovalPolicy_DESTROY,
	})
	p.Imports = &ImportsQueues{Queue: q, DLQ: dlq}
	p.bucketNotifications()
	p.notificationsHandler()

	env := map[string]*string{
		wire.EnvIncidentsTable: p.Tables[table.Incidents.Name].TableName(),
		wire.EnvBucket:         p.Bucket.BucketName(),
		wire.EnvStage:          jsii.String(p.Stage.Prefix()),
	}
	p.jobsEnv(env)
	trigger := p.newFunction(p.spec(importtriggerfn.Function, env))
	p.allowJobs(trigger)
	p.eventSources(trigger)

	// The worker reads import files (pinned to a version: GetObjectVersion)
	// and writes each file's error report next to it; the subject erasure
	// (allowErasure) also rewrites files there without a subject's records.
	allow(worker.Role, []string{"s3:GetObject", "s3:GetObjectVersion"}, p.objectsArn(PrefixImports))
	allow(worker.Role, []string{"s3:PutObject"}, jsii.String(*p.Bucket.BucketArn()+"/"+PrefixImports+"*"+jobkinds.ErrorReportSuffix))
	suppressWildcard(worker.Role, `^Resource::<ArchiveBucket[0-9A-F]+\.Arn>/imports/\*(\.errors\.ndjson)?$`,
		"File imports read any file a tenant drops under imports/<tenant>/ (the tenant in the path is checked against the job's) and write only <file>.errors.ndjson reports there.")
}

// bucketNotifications configures the bucket's event notifications
// (topology.BucketNotifications, which the local stack's emulator gets
// too). Each destination adds its queue's policy: s3.amazonaws.com may
// send, for this bucket only (aws:SourceArn, aws:SourceAccount).
func (p *Platform) bucketNotifications() {
	for _, n := range topology.BucketNotifications() {
		var q awssqs.IQueue
		switch n.Queue {
		case topology.ImportsQueueName:
			q = p.Imports.Queue
		default:
			panic(fmt.Sprintf("bucket notification to an unknown queue %q", n.Queue))
		}
		filter := &awss3.NotificationKeyFilter{}
		if n.Prefix != "" {
			filter.Prefix = jsii.String(n.Prefix)
		}
		if n.Suffix != "" {
			filter.Suffix = jsii.String(n.Suffix)
		}
		for _, e := range n.Events {
			event, ok := s3Events[e]
			if !ok {
				panic(fmt.Sprintf("bucket notification of an unknown event %q", e))
			}
			p.Bucket.AddEventNotification(event, awss3notifications.NewSqsDestination(q), filter)
		}
	}
}

// s3Events are the S3 event names a notification may name (CDK's enum).
var s3Events = map[string]awss3.EventType{
	"s3:ObjectCreated:*":                       awss3.EventType_OBJECT_CREATED,
	"s3:ObjectCreated:Put":                     awss3.EventType_OBJECT_CREATED_PUT,
	"s3:ObjectCreated:Post":                    awss3.EventType_OBJECT_CREATED_POST,
	"s3:ObjectCreated:Copy":                    awss3.EventType_OBJECT_CREATED_COPY,
	"s3:ObjectCreated:CompleteMultipartUpload": awss3.EventType_OBJECT_CREATED_COMPLETE_MULTIPART_UPLOAD,
	"s3:ObjectRemoved:*":                       awss3.EventType_OBJECT_REMOVED,
}

// notificationsHandler gives CDK's BucketNotificationsHandler (the
// deploy-time custom resource that puts the bucket's notification
// configuration; it never runs at request time) a log group with the
// stage's retention, as autoDeleteLogs does for the auto-delete provider,
// and justifies what cdk-nag finds in CDK's own code.
func (p *Platform) notificationsHandler() {
	for _, c := range *p.Stack.Node().Children() {
		id := *c.Node().Id()
		if !strings.HasPrefix(id, "BucketNotificationsHandler") {
			continue
		}
		fn, ok := c.Node().TryFindChild(jsii.String("Resource")).(awscdk.CfnResource)
		if !ok {
			panic("the bucket notifications handler has no function resource: CDK changed it; see notificationsHandler")
		}
		lg := awslogs.NewLogGroup(p.Stack, jsii.String("BucketNotificationsLogs"), &awslogs.LogGroupProps{
			LogGroupName:  jsii.String("/aws/lambda/" + p.Stage.Prefix() + "-bucket-notifications"),
			Retention:     retentionDays[p.Stage.LogRetentionDays],
			RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		})
		fn.AddPropertyOverride(jsii.String("LoggingConfig.LogGroup"), lg.LogGroupName())
		p.NotificationsLogs = lg
		suppress(c, "AwsSolutions-IAM4", "CDK's BucketNotificationsHandler (deploy-time custom resource that sets the bucket's S3 → SQS notification) uses the AWS-managed AWSLambdaBasicExecutionRole for its logs.")
		suppress(c, "AwsSolutions-IAM5", "CDK's BucketNotificationsHandler needs s3:PutBucketNotification on the one bucket; CDK scopes its policy with a wildcard resource it generates.")
		suppress(c, "AwsSolutions-L1", "CDK pins the BucketNotificationsHandler's runtime; it runs only during deployments.")
	}
}
