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
		dlq := awssqs.NewQueue(p.Stack, jsii.String(id+"DLQ"), &awssqs.QueueProps{
			QueueName:       jsii.String(tp.DLQName(p.Stage.Prefix())),
			Fifo:            fifo(tp.FIFO),
			Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
			EnforceSSL:      jsii.Bool(true),
			RetentionPeriod: duration(dlqRetention),
			// The DLQ archiver's event source (no batching window).
			VisibilityTimeout: duration(topology.EventSourceVisibility(archiverTimeout, 0)),
			// Queues hold messages in flight only: the ledger, outbox and
			// incidents (retained tables) are the durable record.
			RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		})
		q := awssqs.NewQueue(p.Stack, jsii.String(id+"Queue"), &awssqs.QueueProps{
			QueueName:         jsii.String(tp.QueueName(p.Stage.Prefix())),
			Fifo:              fifo(tp.FIFO),
			Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
			EnforceSSL:        jsii.Bool(true),
			RetentionPeriod:   duration(queueRetention),
			VisibilityTimeout: duration(tp.VisibilityTimeout),
			DeadLetterQueue: &awssqs.DeadLetterQueue{
				Queue:           dlq,
				MaxReceiveCount: jsii.Number(float64(tp.RedriveMaxReceiveCount())),
			},
			RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		})
		p.Queues[tp.Name] = &TopicQueues{Topic: tp, Queue: q, DLQ: dlq}
	}
}

// fifo is nil for standard queues, which keeps FifoQueue out of their
// template (it is a replacement-only property).
func fifo(b bool) *bool {
	if !b {
		return nil
	}
	return jsii.Bool(true)
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
	var b strings.Builder
	b.WriteString("{")
	for i, e := range kv {
		if i > 0 {
			b.WriteString(",")
		}
		k, _ := json.Marshal(e.Key)
		b.Write(k)
		b.WriteString(`:"`)
		b.WriteString(*e.Value)
		b.WriteString(`"`)
	}
	b.WriteString("}")
	return jsii.String(b.String())
}

func duration(d time.Duration) awscdk.Duration {
	return awscdk.Duration_Seconds(jsii.Number(d.Seconds()))
}
