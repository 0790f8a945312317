package consumerfn

import (
	"context"
	"fmt"
	"strings"

	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
)

// Function is the descriptor of a topic's consumer function, a view of its
// kind's descriptor: deployed evp-<stage>-consumer-<topic, dots as
// hyphens>, locally FunctionName(tp), fed by an SQS event source on the
// topic's queue shaped by the topology (batch size, window, maximum
// concurrency) with partial batch responses. Its Load is the kind's; its
// local build is the kind's Local (nil: the local stack wires the kind
// itself).
func Function(tp topology.Topic, k Kind) wire.Function {
	f := wire.Function{
		Name:        "consumer-" + strings.Trim(hyphenate(tp.Name), "-"),
		LocalName:   FunctionName(tp),
		Binary:      k.Role,
		ID:          "Consumer" + constructName(tp.Name),
		Description: fmt.Sprintf("Consumer of %s (%s)", tp.Name, tp.Consumer),
		MemoryMB:    256,
		Timeout:     tp.ConsumerTimeout,
		Services:    Services(k),
		Queues:      []wire.QueueSource{QueueSource(tp)},
	}
	if k.Load != nil {
		f.Wiring.Load = func(r *envconf.Reader, top topology.Topology) (any, error) { return loaded{r, top}, k.Load(r, top) }
	}
	if k.Local != nil {
		// The kind's Local reads the environment itself: Load hands it on.
		f.Wiring.Build = func(ctx context.Context, conf any, src wire.ClientSource, rt wire.Runtime) (any, error) {
			l, ok := conf.(loaded)
			if !ok {
				return nil, fmt.Errorf("consumerfn: a %T is not a consumer's environment", conf)
			}
			var cl Clients
			if src.Fill != nil {
				if err := src.Fill(&cl); err != nil {
					return nil, err
				}
			} else {
				cl = NewClients(src.Config)
			}
			c, err := k.Local(ctx, l.env, l.top, cl, rt)
			if err != nil {
				return nil, err
			}
			return c.Handle, nil
		}
	}
	return f
}

// loaded is what a consumer's Load hands its Build: a kind's Local reads
// the environment itself.
type loaded struct {
	env *envconf.Reader
	top topology.Topology
}

// QueueSource is a topic consumer's event source mapping, shaped by the
// topology.
func QueueSource(tp topology.Topic) wire.QueueSource {
	return wire.QueueSource{Queue: wire.QueueTopic, Topic: tp.Name, BatchSize: tp.BatchSize, BatchWindow: tp.BatchWindow,
		MaxConcurrency: tp.MaxConcurrency, ReportFailures: true}
}

// Services are the AWS services a consumer kind's binary calls: DynamoDB,
// SQS and S3, and Lambda to tell the subscriber-health function its
// topic's breaker changed (an asynchronous invoke, only on a transition),
// plus its kind's Services.
func Services(k Kind) []string {
	return append([]string{"dynamodb", "sqs", "s3", "lambda"}, k.Services...)
}

// hyphenate turns every run of bytes other than a-z and 0-9 into one
// hyphen, as the CDK app's physical names do: the regexp [^a-z0-9]+
// replaced by "-", written out over bytes (a package-level regexp is
// compiled by every cold start of every function that links this
// package; function_internal_test.go holds it to the regexp).
func hyphenate(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	run := false
	for i := range len(s) {
		if c := s[i]; 'a' <= c && c <= 'z' || '0' <= c && c <= '9' {
			b.WriteByte(c)
			run = false
		} else if !run {
			b.WriteByte('-')
			run = true
		}
	}
	return b.String()
}

// constructName turns "billing.events" into "BillingEvents" (the CDK
// app's construct ids).
func constructName(topic string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(topic, func(r rune) bool { return r == '.' || r == '-' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}
