// Package consumerfn is what every consumer function's wiring shares (one
// Lambda per topic, chosen by CONSUMER_TOPIC): its environment, its
// DynamoDB, SQS and S3 clients and the consume runtime around the topic's
// handler, and the descriptor of a consumer kind (Kind). httpconsumerfn,
// archiveconsumerfn and purgeconsumerfn add their handlers and
// descriptors.
package consumerfn

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/lambdainvoke"
	"github.com/siteswarm/eventplatform/internal/aws/s3blob"
	"github.com/siteswarm/eventplatform/internal/aws/sqsqueue"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/observe/trace"
	"github.com/siteswarm/eventplatform/internal/subscriberhealth"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/dataclients"
)

// Environment variables of every consumer function (docs/consumers.md),
// besides EVENTS_TABLE and INCIDENTS_TABLE. Never rename one.
const (
	// EnvTopic is the topic this function consumes, e.g.
	// "billing.events"; its tuning (timeout, FIFO, …) comes from the
	// topology.
	EnvTopic = "CONSUMER_TOPIC"
	// EnvQueueURL is the topic queue's URL (retry delays are visibility
	// changes on it).
	EnvQueueURL = "CONSUMER_QUEUE_URL"
	// EnvDLQURL is the topic's dead-letter queue URL (poison messages are
	// sent there at once).
	EnvDLQURL = "CONSUMER_DLQ_URL"
	// EnvBackoffBase is the retry delay after the first failed receive,
	// doubled per receive, e.g. "5s".
	EnvBackoffBase = "CONSUMER_BACKOFF_BASE"
	// EnvBackoffCap bounds every retry delay (Retry-After included), e.g.
	// "15m".
	EnvBackoffCap = "CONSUMER_BACKOFF_CAP"
	// EnvConcurrency bounds the messages (FIFO: message groups) one
	// invocation works on at once.
	EnvConcurrency = "CONSUMER_CONCURRENCY"
	// EnvHealthFunction names the subscriber-health function a consumer
	// tells of its breaker's trips and closes (wire.EnvHealthFunction).
	EnvHealthFunction = wire.EnvHealthFunction
)

// FunctionName is the function name of a topic's consumer,
// "consumer-<kind>-<topic, dots as hyphens>" (e.g.
// "consumer-http-billing-events"): the function's name in the local stack.
func FunctionName(tp topology.Topic) string {
	return fmt.Sprintf("consumer-%s-%s", tp.Consumer, strings.ReplaceAll(tp.Name, ".", "-"))
}

// Config is what every consumer function needs.
type Config struct {
	Consume        consume.Config
	QueueURL       string
	DLQURL         string
	EventsTable    string
	IncidentsTable string
	// HealthFunction is told of breaker transitions ("": nobody).
	HealthFunction string
}

// Load reads the shared part for a topic of the given consumer kind.
// Callers add their own variables and then check r.Err and Validate.
func Load(r *envconf.Reader, top topology.Topology, kind topology.ConsumerKind) Config {
	c := Config{
		QueueURL:       wire.Required(r, EnvQueueURL, ""),
		DLQURL:         wire.Required(r, EnvDLQURL, ""),
		EventsTable:    wire.Required(r, wire.EnvEventsTable, ""),
		IncidentsTable: wire.Required(r, wire.EnvIncidentsTable, "replay attestations"),
		HealthFunction: r.String(EnvHealthFunction, ""),
	}
	name := r.String(EnvTopic, "")
	tp, ok := top.Topic(name)
	switch {
	case name == "":
		r.Fail(fmt.Errorf("%s is required", EnvTopic))
	case !ok:
		r.Fail(fmt.Errorf("%s=%q is not a topic of the topology", EnvTopic, name))
	case tp.Consumer != kind:
		r.Fail(fmt.Errorf("%s=%q is consumed by the %q consumer, not %q", EnvTopic, name, tp.Consumer, kind))
	}
	c.Consume = consume.Config{
		Topic:       tp,
		Backoff:     consume.Backoff{Base: r.Duration(EnvBackoffBase, 0), Cap: r.Duration(EnvBackoffCap, 0)},
		Concurrency: r.Int(EnvConcurrency, 0),
	}.WithDefaults()
	return c
}

// Clients are the AWS services every consumer calls: the data path's
// bundle, and Lambda to notify the subscriber-health function (nil: no
// notices; the function's schedule applies every state).
type Clients struct {
	dataclients.Clients
	Lambda *lambda.Client
}

// NewClients builds them from one aws.Config.
func NewClients(cfg aws.Config) Clients {
	return Clients{Clients: dataclients.New(cfg), Lambda: lambda.NewFromConfig(cfg)}
}

// Breaker is the topic's subscriber-health breaker as this consumer sees
// it (internal/subscriberhealth), its record in the events table; nil when the
// topic's policy turns it off.
func Breaker(c Config, cl Clients, rt wire.Runtime) (consume.Breaker, error) {
	tp := c.Consume.Topic
	if tp.Breaker.Off {
		return nil, nil
	}
	var n subscriberhealth.Notifier
	if c.HealthFunction != "" && cl.Lambda != nil {
		n = &lambdainvoke.Notifier{Client: cl.Lambda, Function: c.HealthFunction}
	}
	return subscriberhealth.NewObserver(subscriberhealth.ObserverConfig{Topic: tp}, subscriberhealth.ObserverDeps{
		Store:    &dynamo.Breakers{Client: cl.DynamoDB, Table: c.EventsTable},
		Notifier: n,
		Log:      rt.Log,
		Now:      rt.Now,
	})
}

// New builds the consume runtime around a topic's handler (set exactly one
// of handler and batch).
func New(c Config, cl Clients, rt wire.Runtime, handler consume.Handler, batch consume.BatchHandler) (*consume.Consumer, error) {
	rt = rt.WithDefaults()
	log := rt.Log.With("topic", c.Consume.Topic.Name)
	breaker, err := Breaker(c, cl, wire.Runtime{Log: log, Metrics: rt.Metrics, Now: rt.Now})
	if err != nil {
		return nil, err
	}
	return consume.New(c.Consume, consume.Deps{
		Handler:   handler,
		Batch:     batch,
		Rows:      &dynamo.Events{Client: cl.DynamoDB, Table: c.EventsTable, Log: log},
		Queue:     &sqsqueue.Source{Client: cl.SQS, URL: c.QueueURL, DLQURL: c.DLQURL, FIFO: c.Consume.Topic.FIFO},
		Payloads:  &s3blob.S3{Client: cl.S3},
		Incidents: &dynamo.Incidents{Client: cl.DynamoDB, Table: c.IncidentsTable},
		Breaker:   breaker,
		Metrics:   rt.Metrics,
		Log:       log,
		Now:       rt.Now,
		Trace:     trace.Continue,
	})
}
