package platform

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/siteswarm/eventplatform/internal/topology"
)

const (
	// queueRetention is the topic queue's message retention: SQS's maximum
	// (14 days), so a topic whose subscriber-health breaker holds its events
	// through a long outage keeps them (the breaker escalates after an
	// hour; docs/operations.md). A redriven message keeps its original
	// enqueue time: the DLQ keeps messages as long.
	queueRetention = topology.QueueRetention
	// dlqRetention: the archiver drains DLQs at once; 14 days (the SQS
	// maximum) is the safety net while it is broken.
	dlqRetention = 14 * 24 * time.Hour
)

// TopicQueues is a topic's queue and its redrive dead-letter queue.
type TopicQueues struct {
	Topic topology.Topic
	Queue awssqs.Queue
	DLQ   awssqs.Queue
}

// newQueues creates, for every topic of the topology, the topic queue and
// its DLQ with the topology's names, visibility timeout, maxReceiveCount and
// FIFO setting; SSE-SQS encryption and an SSL-only queue policy on both.
func (p *Platform) newQueues() {
	p.Queues = map[string]*TopicQueues{}
	for _, tp := range p.Topology.Topics {
		if want := topology.EventSourceVisibility(tp.ConsumerTimeout, tp.BatchWindow); tp.VisibilityTimeout < want {
			panic(fmt.Sprintf("topic %s: visibility timeout %s is under 6 × its consumer timeout %s + its batch window %s = %s (AWS's guidance for an SQS event source)",
				tp.Name, tp.VisibilityTimeout, tp.ConsumerTimeout, tp.BatchWindow, want))
		}
		id := logicalName(tp.Name)
		dlqProps := &awssqs.QueueProps{
			QueueName:       jsii.String(tp.DLQName(p.Stage.Prefix())),
			Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
			EnforceSSL:      jsii.Bool(true),
			RetentionPeriod: duration(dlqRetention),
			// The DLQ archiver's event source (no batching window).
			VisibilityTimeout: duration(topology.EventSourceVisibility(archiverTimeout, 0)),
			// Queues hold messages in flight only: the ledger, outbox and
			// incidents (retained tables) are the durable record.
			RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		}
		fifoQueue(dlqProps, tp.FIFO)
		dlq := awssqs.NewQueue(p.Stack, jsii.String(id+"DLQ"), dlqProps)
		qProps := &awssqs.QueueProps{
			QueueName:         jsii.String(tp.QueueName(p.Stage.Prefix())),
			Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
			EnforceSSL:        jsii.Bool(true),
			RetentionPeriod:   duration(queueRetention),
			VisibilityTimeout: duration(tp.VisibilityTimeout),
			DeadLetterQueue: &awssqs.DeadLetterQueue{
				Queue:           dlq,
				MaxReceiveCount: jsii.Number(float64(tp.RedriveMaxReceiveCount())),
			},
			RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		}
		fifoQueue(qProps, tp.FIFO)
		q := awssqs.NewQueue(p.Stack, jsii.String(id+"Queue"), qProps)
		p.Queues[tp.Name] = &TopicQueues{Topic: tp, Queue: q, DLQ: dlq}
	}
}

// fifoQueue makes a FIFO topic's queue (and its DLQ: SQS requires the DLQ
// of a FIFO queue to be FIFO) a high-throughput FIFO queue; a standard
// queue's template keeps none of these properties (FifoQueue is a
// replacement-only property).
//
//   - DeduplicationScope messageGroup and FifoThroughputLimit
//     perMessageGroupId: a FIFO topic's groups are the tenants' entities
//     (a Stripe customer each), thousands of them, each with a handful of
//     events; the queue-wide limit (300 messages/s without batching) would
//     cap the whole topic at one busy customer's rate, while per group it
//     applies to each customer alone (AWS's high-throughput FIFO mode, which
//     needs both settings).
//   - Explicit deduplication ids, not content-based deduplication: the
//     sender's id is the event's key (a provider retry or a re-drive of the
//     same event inside the 5-minute window is dropped), a replay carries
//     its own (replay:<incident>:<n>, so it is never dropped as a copy of
//     the original whose body it repeats), a dead letter dlq:<message id>.
//     A hash of the body would drop a replay and could not tell a re-drive
//     whose body differs (a payload claim-checked since) from a new event.
func fifoQueue(props *awssqs.QueueProps, fifo bool) {
	if !fifo {
		return
	}
	props.Fifo = jsii.Bool(true)
	props.ContentBasedDeduplication = jsii.Bool(false)
	props.DeduplicationScope = awssqs.DeduplicationScope_MESSAGE_GROUP
	props.FifoThroughputLimit = awssqs.FifoThroughputLimit_PER_MESSAGE_GROUP_ID
}

// queueURLs is the JSON object topic → queue URL (or DLQ URL) the functions
// read from their environment.
func (p *Platform) queueURLs(dlq bool) *string {
	var kv []keyValue
	for _, tp := range p.Topology.Topics {
		qs := p.Queues[tp.Name]
		url := qs.Queue.QueueUrl()
		if dlq {
			url = qs.DLQ.QueueUrl()
		}
		kv = append(kv, keyValue{tp.Name, url})
	}
	return jsonObject(kv)
}

type keyValue struct {
	Key   string
	Value *string
}

// jsonObject renders {"key":"value",…} in the given order, where values may
// be CDK tokens (queue URLs, ARNs: they never contain quotes or
// backslashes). Stack.ToJsonString would take a Go map, whose random
// iteration order would change the template on every synth.
func jsonObject(kv []keyValue) *string {
	quoted := make([]keyValue, len(kv))
	for i, e := range kv {
		quoted[i] = keyValue{Key: e.Key, Value: jsii.String(`"` + *e.Value + `"`)}
	}
	return jsonObjects(quoted)
}

// jsonObjects renders {"key":value,…} in the given order, where each value
// is already JSON (it may hold CDK tokens: ARNs never contain quotes).
func jsonObjects(kv []keyValue) *string {
	var b strings.Builder
	b.WriteString("{")
	for i, e := range kv {
		if i > 0 {
			b.WriteString(",")
		}
		k, _ := json.Marshal(e.Key)
		b.Write(k)
		b.WriteString(":")
		b.WriteString(*e.Value)
	}
	b.WriteString("}")
	return jsii.String(b.String())
}

func duration(d time.Duration) awscdk.Duration {
	return awscdk.Duration_Seconds(jsii.Number(d.Seconds()))
}
