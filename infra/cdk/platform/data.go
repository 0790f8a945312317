package platform

import (
	"slices"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"

	"github.com/siteswarm/eventplatform/internal/aws/table"
)

// removal is the removal policy of stateful resources (tables, bucket).
func (p *Platform) removal() awscdk.RemovalPolicy {
	if p.Stage.Retained() {
		return awscdk.RemovalPolicy_RETAIN
	}
	return awscdk.RemovalPolicy_DESTROY
}

// newTables creates every table of internal/aws/table: on-demand, PITR, SSE
// with the AWS-managed key (no key policy to maintain, and every grant
// below stays a plain DynamoDB statement), TTL where the definition has
// one, deletion protection when the stage retains data.
func (p *Platform) newTables() {
	p.Tables = map[string]awsdynamodb.Table{}
	for _, def := range table.All() {
		props := &awsdynamodb.TableProps{
			TableName:    jsii.String(def.PhysicalName(p.Stage.Prefix())),
			PartitionKey: attr(def.PK),
			BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
			PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
				PointInTimeRecoveryEnabled: jsii.Bool(true),
			},
			Encryption:         awsdynamodb.TableEncryption_AWS_MANAGED,
			DeletionProtection: jsii.Bool(p.Stage.Retained()),
			RemovalPolicy:      p.removal(),
		}
		if def.SK != nil {
			props.SortKey = attr(*def.SK)
		}
		if def.TTLAttribute != "" {
			props.TimeToLiveAttribute = jsii.String(def.TTLAttribute)
		}
		t := awsdynamodb.NewTable(p.Stack, jsii.String(logicalName(def.Name)+"Table"), props)
		indexes := subjectIndexes(def.Indexes, p.Stage.SubjectIndexStep)
		if def.Name == table.Incidents.Name {
			indexes = incidentIndexes(p.Stage.IncidentIndexStep, p.Stage.SubjectIndexStep)
		}
		for _, ix := range indexes {
			gsi := &awsdynamodb.GlobalSecondaryIndexProps{
				IndexName:      jsii.String(ix.Name),
				PartitionKey:   attr(ix.PK),
				ProjectionType: awsdynamodb.ProjectionType(ix.Projection),
			}
			if ix.SK != nil {
				gsi.SortKey = attr(*ix.SK)
			}
			if ix.Projection == table.ProjectInclude {
				gsi.NonKeyAttributes = jsii.Strings(ix.NonKey...)
			}
			t.AddGlobalSecondaryIndex(gsi)
		}
		p.Tables[def.Name] = t
	}
}

// incidentIndexes are the incident table's indexes at an upgrade step:
// each step creates or deletes one index, as CloudFormation requires.
// Listings do not work until step 3 (status) and the final deploy (tenant).
// The subject identifier indexes come after it (subjectIndexes).
func incidentIndexes(step, subjectStep int) []table.Index {
	before, now := table.IncidentIndexesBefore, table.Incidents.Indexes
	switch step {
	case 1:
		return before[1:] // status-createdAt deleted
	case 2:
		return nil // tenant-createdAt deleted
	case 3:
		return now[:1] // status-lastFailedAt created
	}
	return subjectIndexes(now, subjectStep)
}

// subjectIndexes are a table's indexes at a subject index upgrade step:
// 1 without the subject identifier indexes (the layout before them), 2
// with the subject index only, 0 (done) with both.
func subjectIndexes(ixs []table.Index, step int) []table.Index {
	drop := map[int][]string{1: {table.IndexSubject, table.IndexOwner}, 2: {table.IndexOwner}}[step]
	return slices.DeleteFunc(slices.Clone(ixs), func(ix table.Index) bool { return slices.Contains(drop, ix.Name) })
}

func attr(k table.Key) *awsdynamodb.Attribute {
	typ := awsdynamodb.AttributeType_STRING
	if k.Type == table.Number {
		typ = awsdynamodb.AttributeType_NUMBER
	}
	return &awsdynamodb.Attribute{Name: jsii.String(k.Name), Type: typ}
}

// Object key prefixes of the archive bucket (see docs/data-model.md).
const (
	// PrefixPayloads holds claim-checked payloads; they expire after the
	// ledger retention plus a margin (DynamoDB TTL deletes lazily).
	PrefixPayloads = "payloads/"
	// payloadGrace is how long a claim-checked payload outlives its ledger
	// item's expiresAt.
	payloadGrace = 7 * 24 * time.Hour
)

// newBucket creates the archive bucket (claim-checked payloads, incident
// payloads, the audit archive) and the bucket its server access logs go to.
func (p *Platform) newBucket() {
	logs := awss3.NewBucket(p.Stack, jsii.String("AccessLogsBucket"), &awss3.BucketProps{
		// Server access log delivery supports SSE-S3 only.
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		Versioned:         jsii.Bool(true),
		RemovalPolicy:     p.removal(),
		AutoDeleteObjects: jsii.Bool(!p.Stage.Retained()),
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:                          jsii.String("expire-access-logs"),
			Expiration:                  awscdk.Duration_Days(jsii.Number(float64(max(90, p.Stage.LogRetentionDays)))),
			NoncurrentVersionExpiration: awscdk.Duration_Days(jsii.Number(7)),
		}},
	})
	p.AccessLogs = logs

	retention := time.Duration(p.Stage.LedgerRetentionDays)*24*time.Hour + payloadGrace
	p.Bucket = awss3.NewBucket(p.Stack, jsii.String("ArchiveBucket"), &awss3.BucketProps{
		Encryption:             awss3.BucketEncryption_S3_MANAGED,
		EnforceSSL:             jsii.Bool(true),
		MinimumTLSVersion:      jsii.Number(1.2),
		BlockPublicAccess:      awss3.BlockPublicAccess_BLOCK_ALL(),
		ObjectOwnership:        awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		Versioned:              jsii.Bool(true),
		ServerAccessLogsBucket: logs,
		ServerAccessLogsPrefix: jsii.String("archive/"),
		RemovalPolicy:          p.removal(),
		AutoDeleteObjects:      jsii.Bool(!p.Stage.Retained()),
		LifecycleRules: &[]*awss3.LifecycleRule{
			{
				// Claim-checked payloads are only needed while their ledger
				// item lives (consumers rehydrate within minutes; duplicates
				// compare hashes kept in the ledger).
				Id:         jsii.String("expire-claim-checked-payloads"),
				Prefix:     jsii.String(PrefixPayloads),
				Expiration: awscdk.Duration_Days(jsii.Number(retention.Hours() / 24)),
			},
			{
				// Files dropped to import are copies of the events they
				// publish: kept no longer than the ledger keeps events
				// (a tenant's shorter eventsDays is applied by its
				// retention expiry, with evidence), a version replaced or
				// expired gone a day later.
				Id:                          jsii.String("expire-import-files"),
				Prefix:                      jsii.String(PrefixImports),
				Expiration:                  awscdk.Duration_Days(jsii.Number(float64(p.Stage.LedgerRetentionDays))),
				NoncurrentVersionExpiration: awscdk.Duration_Days(jsii.Number(1)),
			},
			{
				// Versioning protects against overwrites and deletes; old
				// versions need not be kept forever.
				Id:                                  jsii.String("expire-noncurrent-versions"),
				NoncurrentVersionExpiration:         awscdk.Duration_Days(jsii.Number(30)),
				AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(7)),
				ExpiredObjectDeleteMarker:           jsii.Bool(true),
			},
		},
	})
	p.autoDeleteLogs()
}

// autoDeleteLogs gives CDK's bucket auto-delete provider (stages that do
// not retain data) a log group with the stage's retention: left alone its
// function logs to an implicit group that never expires. The handler names
// the group in its LoggingConfig, so it depends on the group and the group
// outlives every invocation, the last ones on stack deletion included.
func (p *Platform) autoDeleteLogs() {
	provider := p.Stack.Node().TryFindChild(jsii.String("Custom::S3AutoDeleteObjectsCustomResourceProvider"))
	if provider == nil {
		return
	}
	handler, ok := provider.Node().TryFindChild(jsii.String("Handler")).(awscdk.CfnResource)
	if !ok {
		panic("the auto-delete provider has no Handler resource: CDK changed it; see autoDeleteLogs")
	}
	lg := awslogs.NewLogGroup(p.Stack, jsii.String("AutoDeleteObjectsLogs"), &awslogs.LogGroupProps{
		LogGroupName:  jsii.String("/aws/lambda/" + p.Stage.Prefix() + "-auto-delete-objects"),
		Retention:     retentionDays[p.Stage.LogRetentionDays],
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	handler.AddPropertyOverride(jsii.String("LoggingConfig.LogGroup"), lg.LogGroupName())
	p.AutoDeleteLogs = lg
}
