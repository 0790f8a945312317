package consumerfn

import (
	"context"

	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
)

// Kind describes one consumer kind to everything but its own binary: the
// CDK app deploys a function per topic of the kind from it (role,
// environment, grants, a per-topic secret), the local stack runs them
// (environment, Local), functions/deps_test.go holds the binary to
// Services, and infra/cdk's environment test loads what the template
// gives it (Load). Each kind's wiring package declares its Kind next to
// its Load and New (httpconsumerfn.Kind); internal/wire/consumerkinds
// registers them. Only plain data and functions the binary links anyway
// live here, so a consumer binary links its own kind and no other.
//
// What a descriptor does not describe, every consumer has: its queue and
// DLQ (CONSUMER_QUEUE_URL, CONSUMER_DLQ_URL), the events and incidents
// tables, claim-checked payloads under payloads/, and the grants for them.
type Kind struct {
	// Kind is the name topics use (topology.Topic.Consumer).
	Kind topology.ConsumerKind
	// Role is its binary, functions/<Role> (built to bin/<Role>); a
	// topic's function is named FunctionName(topic).
	Role string
	// Services are the AWS services the binary calls, and so links
	// (besides every consumer's DynamoDB, SQS and S3).
	Services []string
	// Subscriber, when set, is the variable holding the topic's
	// subscriber URL, which the stage sets per topic (deployed:
	// evp:stages.<stage>.subscribers; locally SUBSCRIBER_URLS, or the
	// stack's sink): without one the CDK app deploys no consumer and
	// alarms on the queue, and a production stage is refused.
	Subscriber string
	// Secret, when set, is a secret of each topic's that the kind reads
	// (HTTP: its subscriber's signing secrets).
	Secret *Secret
	// Objects, when set, is where in the platform bucket the kind writes,
	// per topic.
	Objects *Objects
	// Batch: the kind's handler is a consume.BatchHandler, whose batches
	// claim and complete their outbox rows with PartiQL
	// BatchExecuteStatement (consume.BatchRows): its role also gets
	// dynamodb:PartiQLUpdate on the events table.
	Batch bool
	// Load reads and validates a topic's environment as the function's
	// cold start does.
	Load func(r *envconf.Reader, top topology.Topology) error
	// Local builds a topic's consumer in the local stack and the wire
	// tests: AWS clients of the emulators, secrets from the environment
	// (Secret.Env). Nil for a kind the local stack wires itself (purge:
	// its local purge API and zones in the local SSM, beside purge-api).
	Local func(ctx context.Context, r *envconf.Reader, top topology.Topology, cl Clients, rt wire.Runtime) (*consume.Consumer, error)
}

// Secret is a per-topic secret: a list of strings, newest first (two
// during a rotation).
type Secret struct {
	// ID names the secret's construct after the topic's
	// ("<Topic>SubscriberSecret").
	ID string
	// EnvARN is the variable naming the Secrets Manager secret (deployed;
	// its value is a JSON list).
	EnvARN string
	// Env is the variable holding the values directly, comma-separated:
	// local development only. Locally Env+"_"+<TOPIC> sets one topic's,
	// Env every topic's, and LocalValue applies otherwise.
	Env        string
	LocalValue string
	// Description is the secret's description for a topic: what it holds
	// and how to set it.
	Description func(topic string) string
	// WhyNoRotation says why the secret has no rotation function (the
	// justification of cdk-nag's AwsSolutions-SMG4).
	WhyNoRotation string
}

// Objects is where a kind writes in the platform bucket: under
// <Root>/<topic>/, with Actions. EnvBucket names the bucket; EnvRoot, when
// set, is the variable the root is deployed in (locally the binary's
// default applies).
type Objects struct {
	EnvBucket string
	EnvRoot   string
	Root      string
	Actions   []string
}

// Prefix is a topic's object prefix, "<Root>/<topic>/".
func (o Objects) Prefix(topic string) string { return o.Root + "/" + topic + "/" }
