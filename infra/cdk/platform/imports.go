package platform

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
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
	// The destination adds the queue policy: s3.amazonaws.com may send,
	// for this bucket only (aws:SourceArn, aws:SourceAccount).
	p.Bucket.AddEventNotification(awss3.EventType_OBJECT_CREATED, awss3notifications.NewSqsDestination(q),
		&awss3.NotificationKeyFilter{Prefix: jsii.String(PrefixImports)})
	p.notificationsHandler()

	env := map[string]*string{
		wire.EnvIncidentsTable: p.Tables[table.Incidents.Name].TableName(),
		wire.EnvBucket:         p.Bucket.BucketName(),
		wire.EnvStage:          jsii.String(p.Stage.Prefix()),
	}
	p.jobsEnv(env)
	trigger := p.newFunction(fnSpec{
		ID:          "ImportTrigger",
		Binary:      RoleImportTrigger,
		Name:        importtriggerfn.Name,
		Description: "File imports: starts a file-import job for each file created under imports/<tenant>/ (S3 event notifications)",
		Timeout:     importtriggerfn.Timeout,
		MemoryMB:    256,
		Env:         env,
	})
	p.allowJobs(trigger)
	trigger.Fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(q, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(importtriggerfn.BatchSize),
		ReportBatchItemFailures: jsii.Bool(true),
	}))

	// The worker reads import files (pinned to a version: GetObjectVersion)
	// and writes each file's error report next to it, nothing else there.
	allow(worker.Role, []string{"s3:GetObject", "s3:GetObjectVersion"}, p.objectsArn(PrefixImports))
	allow(worker.Role, []string{"s3:PutObject"}, jsii.String(*p.Bucket.BucketArn()+"/"+PrefixImports+"*"+jobkinds.ErrorReportSuffix))
	suppressWildcard(worker.Role, `^Resource::<ArchiveBucket[0-9A-F]+\.Arn>/imports/\*(\.errors\.ndjson)?$`,
		"File imports read any file a tenant drops under imports/<tenant>/ (the tenant in the path is checked against the job's) and write only <file>.errors.ndjson reports there.")
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
