package iamcalls

import "strings"

// Request is one authorization AWS makes for a call: an IAM action on a
// resource ARN, with the condition keys the request carries (s3:prefix).
type Request struct {
	Action   string            `json:"action"`
	Resource string            `json:"resource"`
	Context  map[string]string `json:"context,omitempty"`
}

// Kind is the kind of a resource a Namer names.
type Kind string

// The resource kinds the platform's functions call.
const (
	Table        Kind = "table"
	Queue        Kind = "queue"
	Bucket       Kind = "bucket"
	Function     Kind = "function"
	Mapping      Kind = "event-source-mapping"
	Topic        Kind = "topic"
	Parameter    Kind = "parameter"
	Secret       Kind = "secret"
	StateMachine Kind = "stateMachine"
)

// Placeholders in recorded ARNs, resolved by the IAM check against the
// synthesized template: the stage's region, account and partition, its
// resource prefix ("evp-dev"), its bucket's name and its SSM parameter
// prefix ("/evp/dev").
const (
	PartitionVar   = "${Partition}"
	RegionVar      = "${Region}"
	AccountVar     = "${Account}"
	StageVar       = "${Stage}"
	BucketVar      = "${Bucket}"
	ParamPrefixVar = "${ParamPrefix}"
)

// Namer maps a local resource name onto the name the stage deploys,
// written with the placeholders above ("local-x1-events" →
// "${Stage}-events"); a name it does not know is returned as it is, so the
// check names it as unknown to the template.
type Namer interface {
	StageName(kind Kind, local string) string
}

// identity names resources as they are (Expand's callers without a
// stack: unit tests).
type identity struct{}

func (identity) StageName(_ Kind, local string) string { return local }

// arns builds the ARNs of resources under the placeholders.
type arns struct{ n Namer }

func (a arns) base(service string) string {
	return "arn:" + PartitionVar + ":" + service + ":" + RegionVar + ":" + AccountVar + ":"
}

func (a arns) table(name string) string {
	return a.base("dynamodb") + "table/" + a.n.StageName(Table, name)
}

func (a arns) index(tbl, index string) string { return a.table(tbl) + "/index/" + index }

// queue is a queue's ARN from its URL (…/<account>/<name>) or name.
func (a arns) queue(urlOrName string) string {
	name := urlOrName[strings.LastIndex(urlOrName, "/")+1:]
	return a.base("sqs") + a.n.StageName(Queue, name)
}

func (a arns) bucket(name string) string {
	return "arn:" + PartitionVar + ":s3:::" + a.n.StageName(Bucket, name)
}

func (a arns) object(bucket, key string) string { return a.bucket(bucket) + "/" + key }

// function is a function's ARN from its name, ARN or partial ARN, with
// the qualifier (version or alias) when one is named.
func (a arns) function(nameOrARN, qualifier string) string {
	name := nameOrARN
	if i := strings.Index(name, "function:"); i >= 0 {
		name = name[i+len("function:"):]
	}
	if q, rest, ok := strings.Cut(name, ":"); ok {
		name = q
		if qualifier == "" {
			qualifier = rest
		}
	}
	arn := a.base("lambda") + "function:" + a.n.StageName(Function, name)
	if qualifier != "" && qualifier != "$LATEST" {
		arn += ":" + qualifier
	}
	return arn
}

func (a arns) mapping(uuid string) string {
	return a.base("lambda") + "event-source-mapping:" + a.n.StageName(Mapping, uuid)
}

// topic is an SNS topic's ARN from its ARN.
func (a arns) topic(arn string) string {
	return a.base("sns") + a.n.StageName(Topic, arn[strings.LastIndex(arn, ":")+1:])
}

// parameter is an SSM parameter's (or path's) ARN: "parameter" followed
// by the name, with a slash between when the name has none of its own.
func (a arns) parameter(name string) string {
	name = a.n.StageName(Parameter, name)
	if !strings.HasPrefix(name, "/") && !strings.HasPrefix(name, ParamPrefixVar) {
		name = "/" + name
	}
	return a.base("ssm") + "parameter" + name
}

// secret is a secret's ARN from its ARN or name.
func (a arns) secret(idOrARN string) string {
	if i := strings.Index(idOrARN, ":secret:"); i >= 0 {
		idOrARN = idOrARN[i+len(":secret:"):]
	}
	return a.base("secretsmanager") + "secret:" + a.n.StageName(Secret, idOrARN)
}

// stateMachine is a state machine's ARN; execution an execution's
// (arn:…:execution:<state machine>:<name>).
func (a arns) stateMachine(arn string) string {
	return a.base("states") + "stateMachine:" + a.n.StageName(StateMachine, arn[strings.LastIndex(arn, ":")+1:])
}

func (a arns) execution(arn string) string {
	parts := strings.Split(arn, ":")
	if len(parts) < 8 {
		return arn
	}
	return a.base("states") + "execution:" + a.n.StageName(StateMachine, parts[6]) + ":" + strings.Join(parts[7:], ":")
}
