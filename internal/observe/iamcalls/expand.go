package iamcalls

import (
	"net/url"
	"reflect"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// Expand is what IAM authorizes for one SDK call (its input params), the
// resources named by n. ok is false for a call it has no rule for: the
// check refuses to judge such a call rather than guess.
func Expand(params any, n Namer) (reqs []Request, ok bool) {
	if n == nil {
		n = identity{}
	}
	a := arns{n}
	if reqs, ok := expandDynamoDB(a, params); ok {
		return reqs, true
	}
	if reqs, ok := expandS3(a, params); ok {
		return reqs, true
	}
	if reqs, ok := expandSQS(a, params); ok {
		return reqs, true
	}
	return expandOther(a, params)
}

func req(action, resource string) Request { return Request{Action: action, Resource: resource} }

// opName is an input type's operation ("*dynamodb.GetItemInput" →
// "GetItem").
func opName(params any) string {
	t := reflect.TypeOf(params)
	if t == nil {
		return ""
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return strings.TrimSuffix(t.Name(), "Input")
}

func expandDynamoDB(a arns, params any) ([]Request, bool) {
	switch p := params.(type) {
	case *dynamodb.QueryInput:
		return []Request{req("dynamodb:Query", tableOrIndex(a, aws.ToString(p.TableName), aws.ToString(p.IndexName)))}, true
	case *dynamodb.ScanInput:
		return []Request{req("dynamodb:Scan", tableOrIndex(a, aws.ToString(p.TableName), aws.ToString(p.IndexName)))}, true
	case *dynamodb.BatchGetItemInput:
		var out []Request
		for tbl := range p.RequestItems {
			out = append(out, req("dynamodb:BatchGetItem", a.table(tbl)))
		}
		return out, true
	case *dynamodb.BatchWriteItemInput:
		var out []Request
		for tbl := range p.RequestItems {
			out = append(out, req("dynamodb:BatchWriteItem", a.table(tbl)))
		}
		return out, true
	case *dynamodb.TransactWriteItemsInput:
		var out []Request
		for _, it := range p.TransactItems {
			switch {
			case it.Put != nil:
				out = append(out, req("dynamodb:PutItem", a.table(aws.ToString(it.Put.TableName))))
			case it.Update != nil:
				out = append(out, req("dynamodb:UpdateItem", a.table(aws.ToString(it.Update.TableName))))
			case it.Delete != nil:
				out = append(out, req("dynamodb:DeleteItem", a.table(aws.ToString(it.Delete.TableName))))
			case it.ConditionCheck != nil:
				out = append(out, req("dynamodb:ConditionCheckItem", a.table(aws.ToString(it.ConditionCheck.TableName))))
			}
		}
		return out, true
	case *dynamodb.TransactGetItemsInput:
		var out []Request
		for _, it := range p.TransactItems {
			if it.Get != nil {
				out = append(out, req("dynamodb:GetItem", a.table(aws.ToString(it.Get.TableName))))
			}
		}
		return out, true
	case *dynamodb.ExecuteStatementInput:
		r, ok := partiQL(a, aws.ToString(p.Statement))
		return []Request{r}, ok
	case *dynamodb.BatchExecuteStatementInput:
		var out []Request
		for _, st := range p.Statements {
			r, ok := partiQL(a, aws.ToString(st.Statement))
			if !ok {
				return nil, false
			}
			out = append(out, r)
		}
		return out, true
	case *dynamodb.ExecuteTransactionInput:
		var out []Request
		for _, st := range p.TransactStatements {
			r, ok := partiQL(a, aws.ToString(st.Statement))
			if !ok {
				return nil, false
			}
			out = append(out, r)
		}
		return out, true
	case *dynamodb.ListTablesInput:
		return []Request{req("dynamodb:ListTables", "*")}, true
	}
	// Every other table operation (GetItem, PutItem, UpdateItem,
	// DeleteItem, DescribeTable, DescribeTimeToLive, …) is its own action
	// on the table.
	if tbl, ok := stringField(params, "TableName"); ok && strings.HasPrefix(reflect.TypeOf(params).String(), "*dynamodb.") {
		return []Request{req("dynamodb:"+opName(params), a.table(tbl))}, true
	}
	return nil, false
}

func tableOrIndex(a arns, tbl, index string) string {
	if index != "" {
		return a.index(tbl, index)
	}
	return a.table(tbl)
}

// partiQL is the action and resource of one PartiQL statement: SELECT →
// dynamodb:PartiQLSelect on the table (or "table"."index"), INSERT INTO,
// UPDATE and DELETE FROM → PartiQLInsert/Update/Delete on the table.
func partiQL(a arns, stmt string) (Request, bool) {
	s := strings.TrimSpace(stmt)
	verb, rest, _ := strings.Cut(s, " ")
	var action, target string
	switch strings.ToUpper(verb) {
	case "SELECT":
		action = "dynamodb:PartiQLSelect"
		i := strings.Index(strings.ToUpper(rest), " FROM ")
		if i < 0 && !strings.HasPrefix(strings.ToUpper(rest), "FROM ") {
			return Request{}, false
		}
		if i >= 0 {
			rest = rest[i+1:]
		}
		target = strings.TrimSpace(rest[len("FROM "):])
	case "INSERT":
		action = "dynamodb:PartiQLInsert"
		target, _ = cutFold(strings.TrimSpace(rest), "INTO ")
	case "UPDATE":
		action, target = "dynamodb:PartiQLUpdate", rest
	case "DELETE":
		action = "dynamodb:PartiQLDelete"
		target, _ = cutFold(strings.TrimSpace(rest), "FROM ")
	default:
		return Request{}, false
	}
	tbl, index, ok := partiQLTarget(strings.TrimSpace(target))
	if !ok {
		return Request{}, false
	}
	return req(action, tableOrIndex(a, tbl, index)), true
}

// partiQLTarget reads `"table"."index"`, `"table"` or `table` at the start
// of s.
func partiQLTarget(s string) (tbl, index string, ok bool) {
	ident := func(s string) (string, string, bool) {
		if strings.HasPrefix(s, `"`) {
			end := strings.Index(s[1:], `"`)
			if end < 0 {
				return "", "", false
			}
			return s[1 : 1+end], s[2+end:], true
		}
		end := strings.IndexAny(s, " .\t\n")
		if end < 0 {
			end = len(s)
		}
		return s[:end], s[end:], s[:end] != ""
	}
	tbl, rest, ok := ident(s)
	if !ok {
		return "", "", false
	}
	if strings.HasPrefix(rest, ".") {
		if index, _, ok = ident(rest[1:]); !ok {
			return "", "", false
		}
	}
	return tbl, index, true
}

func cutFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

func expandS3(a arns, params any) ([]Request, bool) {
	versioned := func(plain, version string, id *string) string {
		if aws.ToString(id) != "" {
			return version
		}
		return plain
	}
	obj := func(bucket, key *string) string { return a.object(aws.ToString(bucket), aws.ToString(key)) }
	switch p := params.(type) {
	case *s3.GetObjectInput:
		return []Request{req(versioned("s3:GetObject", "s3:GetObjectVersion", p.VersionId), obj(p.Bucket, p.Key))}, true
	case *s3.HeadObjectInput:
		return []Request{req(versioned("s3:GetObject", "s3:GetObjectVersion", p.VersionId), obj(p.Bucket, p.Key))}, true
	case *s3.GetObjectAttributesInput:
		return []Request{req(versioned("s3:GetObjectAttributes", "s3:GetObjectVersionAttributes", p.VersionId), obj(p.Bucket, p.Key))}, true
	case *s3.PutObjectInput:
		return []Request{req("s3:PutObject", obj(p.Bucket, p.Key))}, true
	case *s3.CreateMultipartUploadInput:
		return []Request{req("s3:PutObject", obj(p.Bucket, p.Key))}, true
	case *s3.UploadPartInput:
		return []Request{req("s3:PutObject", obj(p.Bucket, p.Key))}, true
	case *s3.CompleteMultipartUploadInput:
		return []Request{req("s3:PutObject", obj(p.Bucket, p.Key))}, true
	case *s3.AbortMultipartUploadInput:
		return []Request{req("s3:AbortMultipartUpload", obj(p.Bucket, p.Key))}, true
	case *s3.ListPartsInput:
		return []Request{req("s3:ListMultipartUploadParts", obj(p.Bucket, p.Key))}, true
	case *s3.CopyObjectInput:
		return append([]Request{req("s3:PutObject", obj(p.Bucket, p.Key))}, copySource(a, aws.ToString(p.CopySource))...), true
	case *s3.UploadPartCopyInput:
		return append([]Request{req("s3:PutObject", obj(p.Bucket, p.Key))}, copySource(a, aws.ToString(p.CopySource))...), true
	case *s3.DeleteObjectInput:
		return []Request{req(versioned("s3:DeleteObject", "s3:DeleteObjectVersion", p.VersionId), obj(p.Bucket, p.Key))}, true
	case *s3.DeleteObjectsInput:
		var out []Request
		if p.Delete != nil {
			for _, o := range p.Delete.Objects {
				out = append(out, req(versioned("s3:DeleteObject", "s3:DeleteObjectVersion", o.VersionId), obj(p.Bucket, o.Key)))
			}
		}
		return out, true
	case *s3.ListObjectsV2Input:
		return []Request{listing(a, "s3:ListBucket", p.Bucket, p.Prefix)}, true
	case *s3.ListObjectsInput:
		return []Request{listing(a, "s3:ListBucket", p.Bucket, p.Prefix)}, true
	case *s3.ListObjectVersionsInput:
		return []Request{listing(a, "s3:ListBucketVersions", p.Bucket, p.Prefix)}, true
	case *s3.ListMultipartUploadsInput:
		return []Request{listing(a, "s3:ListBucketMultipartUploads", p.Bucket, p.Prefix)}, true
	case *s3.HeadBucketInput:
		return []Request{req("s3:ListBucket", a.bucket(aws.ToString(p.Bucket)))}, true
	case *s3.GetBucketVersioningInput:
		return []Request{req("s3:GetBucketVersioning", a.bucket(aws.ToString(p.Bucket)))}, true
	case *s3.GetObjectTaggingInput:
		return []Request{req(versioned("s3:GetObjectTagging", "s3:GetObjectVersionTagging", p.VersionId), obj(p.Bucket, p.Key))}, true
	case *s3.PutObjectTaggingInput:
		return []Request{req(versioned("s3:PutObjectTagging", "s3:PutObjectVersionTagging", p.VersionId), obj(p.Bucket, p.Key))}, true
	case *s3.ListBucketsInput:
		return []Request{req("s3:ListAllMyBuckets", "*")}, true
	}
	return nil, false
}

// listing is a bucket listing with the s3:prefix condition key it carries
// (absent when the request names no prefix, as in IAM).
func listing(a arns, action string, bucket, prefix *string) Request {
	r := req(action, a.bucket(aws.ToString(bucket)))
	if prefix != nil {
		r.Context = map[string]string{"s3:prefix": *prefix}
	}
	return r
}

// copySource is the read of a copy's source ("bucket/key[?versionId=v]",
// URL-encoded).
func copySource(a arns, src string) []Request {
	src = strings.TrimPrefix(src, "/")
	path, query, _ := strings.Cut(src, "?")
	if p, err := url.PathUnescape(path); err == nil {
		path = p
	}
	bucket, key, _ := strings.Cut(path, "/")
	action := "s3:GetObject"
	if v, err := url.ParseQuery(query); err == nil && v.Get("versionId") != "" {
		action = "s3:GetObjectVersion"
	}
	return []Request{req(action, a.object(bucket, key))}
}

func expandSQS(a arns, params any) ([]Request, bool) {
	switch p := params.(type) {
	case *sqs.SendMessageBatchInput:
		return []Request{req("sqs:SendMessage", a.queue(aws.ToString(p.QueueUrl)))}, true
	case *sqs.DeleteMessageBatchInput:
		return []Request{req("sqs:DeleteMessage", a.queue(aws.ToString(p.QueueUrl)))}, true
	case *sqs.ChangeMessageVisibilityBatchInput:
		return []Request{req("sqs:ChangeMessageVisibility", a.queue(aws.ToString(p.QueueUrl)))}, true
	case *sqs.GetQueueUrlInput:
		return []Request{req("sqs:GetQueueUrl", a.queue(aws.ToString(p.QueueName)))}, true
	case *sqs.ListQueuesInput:
		return []Request{req("sqs:ListQueues", "*")}, true
	case *sqs.StartMessageMoveTaskInput:
		// Moving a DLQ's messages back: received and deleted from the
		// source, sent to the destination (its original source when none).
		src := a.queue(arnName(aws.ToString(p.SourceArn)))
		out := []Request{req("sqs:StartMessageMoveTask", src), req("sqs:ReceiveMessage", src), req("sqs:DeleteMessage", src), req("sqs:GetQueueAttributes", src)}
		if d := aws.ToString(p.DestinationArn); d != "" {
			out = append(out, req("sqs:SendMessage", a.queue(arnName(d))))
		}
		return out, true
	case *sqs.ListMessageMoveTasksInput:
		return []Request{req("sqs:ListMessageMoveTasks", a.queue(arnName(aws.ToString(p.SourceArn))))}, true
	}
	// SendMessage, ReceiveMessage, DeleteMessage, ChangeMessageVisibility,
	// GetQueueAttributes, PurgeQueue, …: the action of the operation's name
	// on the queue.
	if u, ok := stringField(params, "QueueUrl"); ok && strings.HasPrefix(reflect.TypeOf(params).String(), "*sqs.") {
		return []Request{req("sqs:"+opName(params), a.queue(u))}, true
	}
	return nil, false
}

func arnName(arn string) string { return arn[strings.LastIndex(arn, ":")+1:] }

func expandOther(a arns, params any) ([]Request, bool) {
	switch p := params.(type) {
	case *lambda.InvokeInput:
		return []Request{req("lambda:InvokeFunction", a.function(aws.ToString(p.FunctionName), aws.ToString(p.Qualifier)))}, true
	case *lambda.ListEventSourceMappingsInput:
		return []Request{req("lambda:ListEventSourceMappings", "*")}, true
	case *lambda.GetEventSourceMappingInput:
		return []Request{req("lambda:GetEventSourceMapping", a.mapping(aws.ToString(p.UUID)))}, true
	case *lambda.UpdateEventSourceMappingInput:
		return []Request{req("lambda:UpdateEventSourceMapping", a.mapping(aws.ToString(p.UUID)))}, true
	case *lambda.DeleteEventSourceMappingInput:
		return []Request{req("lambda:DeleteEventSourceMapping", a.mapping(aws.ToString(p.UUID)))}, true
	case *lambda.GetFunctionInput:
		return []Request{req("lambda:GetFunction", a.function(aws.ToString(p.FunctionName), aws.ToString(p.Qualifier)))}, true
	case *lambda.GetFunctionConfigurationInput:
		return []Request{req("lambda:GetFunctionConfiguration", a.function(aws.ToString(p.FunctionName), aws.ToString(p.Qualifier)))}, true

	case *sns.PublishInput:
		return []Request{req("sns:Publish", a.topic(aws.ToString(p.TopicArn)))}, true
	case *sns.PublishBatchInput:
		return []Request{req("sns:Publish", a.topic(aws.ToString(p.TopicArn)))}, true

	case *ssm.GetParameterInput:
		return []Request{req("ssm:GetParameter", a.parameter(aws.ToString(p.Name)))}, true
	case *ssm.GetParametersInput:
		var out []Request
		for _, name := range p.Names {
			out = append(out, req("ssm:GetParameters", a.parameter(name)))
		}
		return out, true
	case *ssm.GetParametersByPathInput:
		return []Request{req("ssm:GetParametersByPath", a.parameter(strings.TrimSuffix(aws.ToString(p.Path), "/")))}, true
	case *ssm.PutParameterInput:
		return []Request{req("ssm:PutParameter", a.parameter(aws.ToString(p.Name)))}, true
	case *ssm.DeleteParameterInput:
		return []Request{req("ssm:DeleteParameter", a.parameter(aws.ToString(p.Name)))}, true

	case *secretsmanager.GetSecretValueInput:
		return []Request{req("secretsmanager:GetSecretValue", a.secret(aws.ToString(p.SecretId)))}, true
	case *secretsmanager.DescribeSecretInput:
		return []Request{req("secretsmanager:DescribeSecret", a.secret(aws.ToString(p.SecretId)))}, true
	case *secretsmanager.PutSecretValueInput:
		return []Request{req("secretsmanager:PutSecretValue", a.secret(aws.ToString(p.SecretId)))}, true

	case *cloudwatch.GetMetricDataInput:
		// Metric reads have no resource-level permission: only "*".
		return []Request{req("cloudwatch:GetMetricData", "*")}, true

	case *sfn.StartExecutionInput:
		return []Request{req("states:StartExecution", a.stateMachine(aws.ToString(p.StateMachineArn)))}, true
	case *sfn.StartSyncExecutionInput:
		return []Request{req("states:StartSyncExecution", a.stateMachine(aws.ToString(p.StateMachineArn)))}, true
	case *sfn.ListExecutionsInput:
		return []Request{req("states:ListExecutions", a.stateMachine(aws.ToString(p.StateMachineArn)))}, true
	case *sfn.DescribeStateMachineInput:
		return []Request{req("states:DescribeStateMachine", a.stateMachine(aws.ToString(p.StateMachineArn)))}, true
	case *sfn.DescribeExecutionInput:
		return []Request{req("states:DescribeExecution", a.execution(aws.ToString(p.ExecutionArn)))}, true
	case *sfn.GetExecutionHistoryInput:
		return []Request{req("states:GetExecutionHistory", a.execution(aws.ToString(p.ExecutionArn)))}, true
	case *sfn.StopExecutionInput:
		return []Request{req("states:StopExecution", a.execution(aws.ToString(p.ExecutionArn)))}, true
	}
	return nil, false
}

// stringField is a struct field of type *string by name, when it is set.
func stringField(params any, name string) (string, bool) {
	v := reflect.ValueOf(params)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return "", false
	}
	f := v.Elem().FieldByName(name)
	if !f.IsValid() || f.Kind() != reflect.Pointer || f.IsNil() || f.Elem().Kind() != reflect.String {
		return "", false
	}
	return f.Elem().String(), true
}
