package awslocal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dynamodbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire/dataclients"
)

// Clients is the one bundle of AWS clients outside a Lambda: the local
// stack's, the tests' (awslocaltest.Env embeds it) and provisioning's. Each
// function's wiring takes only the clients it calls (its own Clients in
// internal/wire/<fn>), filled from this bundle.
type Clients struct {
	DynamoDB *dynamodb.Client
	SQS      *sqs.Client
	S3       *s3.Client
	SNS      *sns.Client
	// SSM and Secrets read the stage's configuration and secrets.
	SSM     *ssm.Client
	Secrets *secretsmanager.Client
	// Lambda invokes the local stack's functions (set by the stack that
	// runs them; nil elsewhere).
	Lambda *lambda.Client
	// CloudWatch reads the metrics the local stack's functions emit
	// (Metrics, served by the stack; nil elsewhere).
	CloudWatch *cloudwatch.Client
}

// Data is the data path's bundle of them (DynamoDB, SQS, S3), the clients
// most functions' wiring takes.
func (c Clients) Data() dataclients.Clients {
	return dataclients.Clients{DynamoDB: c.DynamoDB, SQS: c.SQS, S3: c.S3}
}

// Queue is a topic's queue and its redrive dead-letter queue.
type Queue struct {
	Topic  string
	URL    string
	ARN    string
	DLQURL string
	DLQARN string
}

// Resources are the physical names Provision created under one prefix.
type Resources struct {
	Prefix         string
	EventsTable    string
	IncidentsTable string
	PurgeTable     string
	JobsTable      string
	AdminTable     string
	// Tables lists every provisioned table (table.All() under Prefix).
	Tables []string
	Bucket string
	// Queues by topic name.
	Queues map[string]Queue
	// JobsQueue is the durable job engine's wake queue (internal/jobs).
	JobsQueue Queue
	// ImportsQueue receives the bucket's S3 event notifications for
	// imports/ (the import-trigger function consumes it).
	ImportsQueue Queue
}

// QueueURLs maps topic name to queue URL.
func (r Resources) QueueURLs() map[string]string {
	out := make(map[string]string, len(r.Queues))
	for t, q := range r.Queues {
		out[t] = q.URL
	}
	return out
}

// DLQURLs maps topic name to dead-letter queue URL.
func (r Resources) DLQURLs() map[string]string {
	out := make(map[string]string, len(r.Queues))
	for t, q := range r.Queues {
		out[t] = q.DLQURL
	}
	return out
}

// BucketName is the archive bucket of a prefix.
func BucketName(prefix string) string { return prefix + "-archive" }

// DLQRetention is how long dead letters are kept: SQS's maximum, so an
// incident can be replayed long after the failure.
const DLQRetention = 14 * 24 * time.Hour

// Provision creates every table of table.All(), a DLQ and a queue per
// topic, and the archive bucket, all under prefix. It is what `make dev`
// runs, so it follows AWS semantics rather than the emulators' leniency: it
// is idempotent (existing resources are reused and converged), waits for
// tables to become ACTIVE before configuring TTL, and only enables TTL when
// it is not already on.
func Provision(ctx context.Context, c Clients, prefix string, top topology.Topology) (Resources, error) {
	res := Resources{
		Prefix:         prefix,
		EventsTable:    table.Events.PhysicalName(prefix),
		IncidentsTable: table.Incidents.PhysicalName(prefix),
		PurgeTable:     table.Purge.PhysicalName(prefix),
		JobsTable:      table.Jobs.PhysicalName(prefix),
		AdminTable:     table.Admin.PhysicalName(prefix),
		Bucket:         BucketName(prefix),
		Queues:         map[string]Queue{},
	}
	for _, def := range table.All() {
		name := def.PhysicalName(prefix)
		res.Tables = append(res.Tables, name)
		if err := provisionTable(ctx, c.DynamoDB, def, name); err != nil {
			return res, err
		}
	}
	for _, tp := range top.Topics {
		q, err := provisionQueues(ctx, c.SQS, prefix, tp)
		if err != nil {
			return res, err
		}
		res.Queues[tp.Name] = q
	}
	jq, err := provisionQueues(ctx, c.SQS, prefix, topology.JobsQueue())
	if err != nil {
		return res, err
	}
	res.JobsQueue = jq
	iq, err := provisionQueues(ctx, c.SQS, prefix, topology.ImportsQueue())
	if err != nil {
		return res, err
	}
	res.ImportsQueue = iq
	if err := provisionBucket(ctx, c.S3, res.Bucket); err != nil {
		return res, err
	}
	if err := provisionNotifications(ctx, c, res.Bucket, map[string]Queue{topology.ImportsQueueName: iq}); err != nil {
		return res, err
	}
	return res, nil
}

// CreateTableInput is the on-demand CreateTable request of a definition.
func CreateTableInput(def table.Def, name string) *dynamodb.CreateTableInput {
	attrs := map[string]table.AttrType{}
	keySchema := func(pk table.Key, sk *table.Key) []dynamodbtypes.KeySchemaElement {
		attrs[pk.Name] = pk.Type
		ks := []dynamodbtypes.KeySchemaElement{{AttributeName: aws.String(pk.Name), KeyType: dynamodbtypes.KeyTypeHash}}
		if sk != nil {
			attrs[sk.Name] = sk.Type
			ks = append(ks, dynamodbtypes.KeySchemaElement{AttributeName: aws.String(sk.Name), KeyType: dynamodbtypes.KeyTypeRange})
		}
		return ks
	}
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: dynamodbtypes.BillingModePayPerRequest,
		KeySchema:   keySchema(def.PK, def.SK),
	}
	for _, ix := range def.Indexes {
		p := &dynamodbtypes.Projection{ProjectionType: dynamodbtypes.ProjectionType(ix.Projection)}
		if ix.Projection == table.ProjectInclude {
			p.NonKeyAttributes = slices.Clone(ix.NonKey)
		}
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, dynamodbtypes.GlobalSecondaryIndex{
			IndexName:  aws.String(ix.Name),
			KeySchema:  keySchema(ix.PK, ix.SK),
			Projection: p,
		})
	}
	for _, n := range slices.Sorted(maps.Keys(attrs)) {
		in.AttributeDefinitions = append(in.AttributeDefinitions, dynamodbtypes.AttributeDefinition{
			AttributeName: aws.String(n), AttributeType: dynamodbtypes.ScalarAttributeType(attrs[n]),
		})
	}
	return in
}

func provisionTable(ctx context.Context, db *dynamodb.Client, def table.Def, name string) error {
	out, err := db.CreateTable(ctx, CreateTableInput(def, name))
	var inUse *dynamodbtypes.ResourceInUseException
	switch {
	case errors.As(err, &inUse):
		// Exists already (make dev re-run): reuse it.
	case err != nil:
		return fmt.Errorf("awslocal: create table %s: %w", name, err)
	}
	if err != nil || out.TableDescription == nil || out.TableDescription.TableStatus != dynamodbtypes.TableStatusActive {
		// AWS creates tables asynchronously, and UpdateTimeToLive fails on a
		// CREATING table. The waiter's first check is immediate.
		if err := dynamodb.NewTableExistsWaiter(db).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 5*time.Minute); err != nil {
			return fmt.Errorf("awslocal: wait for table %s: %w", name, err)
		}
	}
	if def.TTLAttribute == "" {
		return nil
	}
	ttl, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		return fmt.Errorf("awslocal: describe TTL of %s: %w", name, err)
	}
	if d := ttl.TimeToLiveDescription; d != nil {
		switch d.TimeToLiveStatus {
		case dynamodbtypes.TimeToLiveStatusEnabled, dynamodbtypes.TimeToLiveStatusEnabling:
			if aws.ToString(d.AttributeName) == def.TTLAttribute {
				return nil
			}
			return fmt.Errorf("awslocal: table %s has TTL on %q, want %q (disable it first)", name, aws.ToString(d.AttributeName), def.TTLAttribute)
		}
	}
	_, err = db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &dynamodbtypes.TimeToLiveSpecification{
			AttributeName: aws.String(def.TTLAttribute), Enabled: aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("awslocal: enable TTL on %s: %w", name, err)
	}
	return nil
}

func seconds(d time.Duration) string { return strconv.Itoa(int(d / time.Second)) }

func provisionQueues(ctx context.Context, q *sqs.Client, prefix string, tp topology.Topic) (Queue, error) {
	out := Queue{Topic: tp.Name}
	fifo := func(attrs map[string]string) map[string]string {
		if tp.FIFO {
			attrs[string(sqstypes.QueueAttributeNameFifoQueue)] = "true"
			// Producers set a deduplication id explicitly (the event id).
			attrs[string(sqstypes.QueueAttributeNameContentBasedDeduplication)] = "false"
		}
		return attrs
	}
	var err error
	out.DLQURL, out.DLQARN, err = ensureQueue(ctx, q, tp.DLQName(prefix), fifo(map[string]string{
		string(sqstypes.QueueAttributeNameMessageRetentionPeriod): seconds(DLQRetention),
	}))
	if err != nil {
		return out, err
	}
	redrive, _ := json.Marshal(map[string]string{
		"deadLetterTargetArn": out.DLQARN,
		"maxReceiveCount":     strconv.Itoa(tp.RedriveMaxReceiveCount()),
	})
	out.URL, out.ARN, err = ensureQueue(ctx, q, tp.QueueName(prefix), fifo(map[string]string{
		string(sqstypes.QueueAttributeNameVisibilityTimeout): seconds(tp.VisibilityTimeout),
		string(sqstypes.QueueAttributeNameRedrivePolicy):     string(redrive),
	}))
	return out, err
}

// ensureQueue creates a queue, or converges an existing one to attrs:
// CreateQueue is idempotent only while the attributes are unchanged, and a
// topology change on a re-run must not fail `make dev`.
func ensureQueue(ctx context.Context, q *sqs.Client, name string, attrs map[string]string) (url, arn string, err error) {
	created, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	var exists *sqstypes.QueueNameExists
	switch {
	case err == nil:
		url = aws.ToString(created.QueueUrl)
	case errors.As(err, &exists):
		got, gerr := q.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
		if gerr != nil {
			return "", "", fmt.Errorf("awslocal: get queue url %s: %w", name, gerr)
		}
		url = aws.ToString(got.QueueUrl)
		settable := maps.Clone(attrs)
		delete(settable, string(sqstypes.QueueAttributeNameFifoQueue)) // immutable
		if _, serr := q.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: settable}); serr != nil {
			return "", "", fmt.Errorf("awslocal: update queue %s: %w", name, serr)
		}
	default:
		return "", "", fmt.Errorf("awslocal: create queue %s: %w", name, err)
	}
	qa, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", "", fmt.Errorf("awslocal: get arn of queue %s: %w", name, err)
	}
	return url, qa.Attributes[string(sqstypes.QueueAttributeNameQueueArn)], nil
}

// provisionNotifications configures the bucket's event notifications as
// the CDK app configures the stage's (topology.BucketNotifications), each
// queue's policy letting S3 (that bucket only) send to it.
func provisionNotifications(ctx context.Context, c Clients, bucket string, queues map[string]Queue) error {
	var configs []s3types.QueueConfiguration
	for _, n := range topology.BucketNotifications() {
		q, ok := queues[n.Queue]
		if !ok {
			return fmt.Errorf("awslocal: notifications of bucket %s: no queue %q", bucket, n.Queue)
		}
		policy, _ := json.Marshal(map[string]any{
			"Version": "2012-10-17",
			"Statement": []map[string]any{{
				"Effect": "Allow", "Principal": map[string]string{"Service": "s3.amazonaws.com"},
				"Action": "sqs:SendMessage", "Resource": q.ARN,
				"Condition": map[string]any{"ArnLike": map[string]string{"aws:SourceArn": "arn:aws:s3:::" + bucket}},
			}},
		})
		if _, err := c.SQS.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(q.URL),
			Attributes: map[string]string{string(sqstypes.QueueAttributeNamePolicy): string(policy)}}); err != nil {
			return fmt.Errorf("awslocal: %s queue policy: %w", n.Queue, err)
		}
		var rules []s3types.FilterRule
		if n.Prefix != "" {
			rules = append(rules, s3types.FilterRule{Name: s3types.FilterRuleNamePrefix, Value: aws.String(n.Prefix)})
		}
		if n.Suffix != "" {
			rules = append(rules, s3types.FilterRule{Name: s3types.FilterRuleNameSuffix, Value: aws.String(n.Suffix)})
		}
		cfg := s3types.QueueConfiguration{Id: aws.String(n.Queue), QueueArn: aws.String(q.ARN)}
		for _, e := range n.Events {
			cfg.Events = append(cfg.Events, s3types.Event(e))
		}
		if len(rules) > 0 {
			cfg.Filter = &s3types.NotificationConfigurationFilter{Key: &s3types.S3KeyFilter{FilterRules: rules}}
		}
		configs = append(configs, cfg)
	}
	_, err := c.S3.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{
		Bucket:                    aws.String(bucket),
		NotificationConfiguration: &s3types.NotificationConfiguration{QueueConfigurations: configs},
	})
	if err != nil {
		return fmt.Errorf("awslocal: notifications of bucket %s: %w", bucket, err)
	}
	return nil
}

func provisionBucket(ctx context.Context, c *s3.Client, bucket string) error {
	_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
	var owned *s3types.BucketAlreadyOwnedByYou
	var exists *s3types.BucketAlreadyExists
	switch {
	case err == nil, errors.As(err, &owned):
	case errors.As(err, &exists):
		// Some emulators say "exists" for our own bucket; AWS says it when
		// another account owns the name. Only a bucket we can reach is ours.
		if _, herr := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); herr != nil {
			return fmt.Errorf("awslocal: create bucket %s: %w", bucket, err)
		}
	default:
		return fmt.Errorf("awslocal: create bucket %s: %w", bucket, err)
	}
	// The archive bucket is versioned in AWS (architecture §4).
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{
		Bucket:                  aws.String(bucket),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled},
	}); err != nil {
		return fmt.Errorf("awslocal: enable versioning on %s: %w", bucket, err)
	}
	return nil
}

// Teardown deletes what Provision created, ignoring resources that are
// already gone. Tests call it (through NewEnv's cleanup) to keep minidyn's
// tables few and small: its transactions snapshot whole tables and slow
// down as they grow.
func Teardown(ctx context.Context, c Clients, r Resources) error {
	var errs []error
	queues := slices.Collect(maps.Values(r.Queues))
	for _, q := range append(queues, r.JobsQueue, r.ImportsQueue) {
		for _, url := range []string{q.URL, q.DLQURL} {
			if url == "" {
				continue
			}
			_, err := c.SQS.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
			var gone *sqstypes.QueueDoesNotExist
			if err != nil && !errors.As(err, &gone) {
				errs = append(errs, fmt.Errorf("awslocal: delete queue %s: %w", url, err))
			}
		}
	}
	for _, name := range r.Tables {
		_, err := c.DynamoDB.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		var gone *dynamodbtypes.ResourceNotFoundException
		if err != nil && !errors.As(err, &gone) {
			errs = append(errs, fmt.Errorf("awslocal: delete table %s: %w", name, err))
		}
	}
	if r.Bucket != "" {
		if err := deleteBucket(ctx, c.S3, r.Bucket); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// deleteBucket empties a (versioned) bucket and deletes it.
func deleteBucket(ctx context.Context, c *s3.Client, bucket string) error {
	isGone := func(err error) bool {
		var nsb *s3types.NoSuchBucket
		var api smithy.APIError
		return errors.As(err, &nsb) || errors.As(err, &api) && api.ErrorCode() == "NoSuchBucket"
	}
	p := s3.NewListObjectVersionsPaginator(c, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			if isGone(err) {
				return nil
			}
			return fmt.Errorf("awslocal: list %s: %w", bucket, err)
		}
		var ids []s3types.ObjectIdentifier
		for _, v := range page.Versions {
			ids = append(ids, s3types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId})
		}
		for _, m := range page.DeleteMarkers {
			ids = append(ids, s3types.ObjectIdentifier{Key: m.Key, VersionId: m.VersionId})
		}
		for _, id := range ids {
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: id.Key, VersionId: id.VersionId}); err != nil {
				return fmt.Errorf("awslocal: empty %s: %w", bucket, err)
			}
		}
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil && !isGone(err) {
		return fmt.Errorf("awslocal: delete bucket %s: %w", bucket, err)
	}
	return nil
}

// NewPrefix returns a fresh resource prefix: "t" and 8 random hex digits
// (valid in table, queue and bucket names alike).
func NewPrefix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "t" + hex.EncodeToString(b[:])
}
